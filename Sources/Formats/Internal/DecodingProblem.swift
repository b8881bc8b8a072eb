/// Short, readable descriptions of `DecodingError`s for `StoreError` messages.
enum DecodingProblem {
    static func describe(_ error: any Error) -> String {
        guard let error = error as? DecodingError else { return "\(error)" }
        switch error {
        case .dataCorrupted(let context):
            return "the data is not valid (\(context.debugDescription))\(path(context))"
        case .keyNotFound(let key, let context):
            return "no value for key '\(key.stringValue)'\(path(context))"
        case .typeMismatch(let type, let context):
            return "expected \(type)\(path(context)): \(context.debugDescription)"
        case .valueNotFound(let type, let context):
            return "expected \(type) but found null\(path(context))"
        @unknown default:
            return "\(error)"
        }
    }

    private static func path(_ context: DecodingError.Context) -> String {
        let path = context.codingPath.map { $0.intValue.map(String.init) ?? $0.stringValue }
        return path.isEmpty ? "" : " at \(path.joined(separator: "."))"
    }
}
