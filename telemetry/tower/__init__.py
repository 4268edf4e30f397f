"""The control tower's store wiring: a watcher's servers and lease, its live rows and messages,
the actions it took and the trees it lost, written through the store; `tower/` decides, this
package records."""
