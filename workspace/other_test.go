//go:build !linux

package workspace_test

import (
	"io/fs"
	"time"
)

func ctimeOf(fi fs.FileInfo) time.Time { return fi.ModTime() }
