extension StoreError {
    /// `error` with `context` in front of its message: a `StoreError` keeps its code and its cause,
    /// any other error becomes the cause of a new error with `code` whose message is `context`
    /// (the cause's text is not copied into it: ``description`` prints it once).
    package static func wrapping(_ error: any Error, as code: Code, _ context: String) -> StoreError {
        if var storeError = error as? StoreError {
            storeError.message = "\(context): \(storeError.message)"
            return storeError
        }
        return StoreError(code, context, cause: error)
    }
}
