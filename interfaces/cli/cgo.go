//go:build cgo

package cli

// cgoBuilt says the binary was built with cgo, which the SQLite driver (C) needs (cgo_off.go
// has the other side).
const cgoBuilt = true
