package import HanekeProtocols

extension StoreError {
    /// A `StoreError` with code `io` for a failed operation, carrying the system call's error
    /// number (a `StoreError` already made is passed on).
    package static func ioFailure(_ message: String, _ error: any Error) -> StoreError {
        if let error = error as? StoreError { return error }
        return StoreError(.io, message, cause: error, posixCode: (error as? POSIX.Failure)?.posixCode)
    }
}
