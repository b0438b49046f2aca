// Package port holds the application layer's driven ports (the interfaces the use cases call:
// locks, journal, snapshots, restores, the object store, the records, the executor, the shared
// store) and the data the use cases and the adapters exchange through them.
//
// It is the only part of application an adapter sees (architecture_edges_test.go enforces it):
// an adapter in infrastructure/internal implements a port here and never reaches a use case.
// It imports only the domain, so the ports carry no rule of their own: which operation `plan
// undo` may pick, what a retention rule keeps, and every other decision are application's.
package port
