package web

import "errors"

// ErrNotExport is returned (in an *fs.PathError naming the file) when an
// export would overwrite a file that is not an earlier export.
var ErrNotExport = errors.New("exists and is not a tavern export (not overwritten)")
