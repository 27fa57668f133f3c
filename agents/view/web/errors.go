package web

import "errors"

// ErrNotExport is returned (in an *fs.PathError naming the file) when an
// export would overwrite a file that is not an earlier export.
var ErrNotExport = errors.New("exists and is not a tavern export (not overwritten)")

// ErrNotDir is returned (in an *fs.PathError naming it) when an export's
// DIR exists and is not a directory: the pages go into a directory.
var ErrNotDir = errors.New("not a directory")
