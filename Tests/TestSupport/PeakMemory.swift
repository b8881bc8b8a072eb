import Foundation

/// The process's peak resident memory so far, in bytes (`getrusage`'s `ru_maxrss`). It only
/// grows: a test that reads it before and after an operation has an upper bound on what the
/// operation (and whatever ran beside it in the process) touched.
public func peakMemory() -> Int {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return usage.ru_maxrss * 1024   // kilobytes on Linux
}
