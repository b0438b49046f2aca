//go:build !cgo

package cli

// cgoBuilt is false in a build without cgo (CGO_ENABLED=0, or no C compiler found by go run):
// it compiles, and every command that opens a workspace would fail with go-sqlite3's stub message.
const cgoBuilt = false
