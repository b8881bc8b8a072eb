extension StoreError {
    /// `error` with `context` in front of its message: a `StoreError` keeps its code, any other
    /// error becomes the cause of a new error with `code`.
    package static func wrapping(_ error: any Error, as code: Code, _ context: String) -> StoreError {
        if var storeError = error as? StoreError {
            storeError.message = "\(context): \(storeError.message)"
            return storeError
        }
        return StoreError(code, "\(context): \(error)", cause: error)
    }
}
