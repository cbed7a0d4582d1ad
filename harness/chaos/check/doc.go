// Package check holds the chaos suite's checkers: pure functions over data
// the harness recorded, with no processes, clocks or I/O of their own
// beyond writing porcupine's visualisation file.
//
//   - Linearizable checks a history of volume register, deregister and
//     read operations against a model of the volume table, partitioned per
//     volume ID, with github.com/anishathalye/porcupine.
//   - SingleWriter, WriterFile, TimeToFree and Convergence check the
//     single-writer rule (on samples of the claims and allocations), the
//     writers' own files, how soon claims are freed once their alloc
//     ended and the fault before healed, and that every server ends with
//     every acknowledged write.
//
// Workload goroutines record operations through a Recorder, which is safe
// for concurrent use; everything else in the package is a function of its
// arguments and may be called from any goroutine.
//
// The package imports no berth package (importcheck keeps it a leaf): the
// harness translates API objects into the plain types here, so the
// checkers state berth's promises without depending on how berth keeps
// them.
package check
