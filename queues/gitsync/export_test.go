package gitsync

// SetTestHookAfterUnit lets the external tests (package gitsync_test,
// which may import the packages above this one) act between two lock
// units of an apply; it returns the function that removes the hook.
func SetTestHookAfterUnit(f func(key string, paths []string)) (reset func()) {
	testHookAfterUnit = f
	return func() { testHookAfterUnit = nil }
}
