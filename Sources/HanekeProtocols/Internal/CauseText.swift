import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// How ``StoreError/description`` prints a cause: readably, on one line, once.
enum CauseText {
    /// `error` in words: a `StoreError` as its description, a system error as its reason and
    /// number, a coding error as its problem and coding path, a `URLError` as its description and
    /// code, anything else as itself.
    static func describe(_ error: any Error) -> String {
        switch error {
        case let error as StoreError:
            return error.description
        case let error as DecodingError:
            return describe(error)
        case let error as EncodingError:
            return describe(error)
        case let error as URLError:
            if let text = error.userInfo[NSLocalizedDescriptionKey] as? String {
                return "\(text) (URLError \(error.code.rawValue))"
            }
            return "URLError \(error.code.rawValue)"
        default:
            let bridged = error as NSError
            if bridged.domain == NSPOSIXErrorDomain, let code = POSIXErrorCode(rawValue: Int32(truncatingIfNeeded: bridged.code)) {
                return describe(code)
            }
            return "\(error)"
        }
    }

    /// `Permission denied (errno 13 EACCES)`.
    static func describe(_ code: POSIXErrorCode) -> String {
        "\(String(cString: strerror(code.rawValue))) (errno \(code.rawValue) \(code))"
    }

    /// What did not decode, and where: `no value for key 'name' at user`.
    private static func describe(_ error: DecodingError) -> String {
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

    /// What could not be encoded, and where: `cannot encode Double at ratio: …`.
    private static func describe(_ error: EncodingError) -> String {
        switch error {
        case .invalidValue(let value, let context):
            return "cannot encode \(type(of: value))\(path(context)): \(context.debugDescription)"
        @unknown default:
            return "\(error)"
        }
    }

    /// ` at user.tags.0`, or nothing at the top level.
    private static func path(_ context: DecodingError.Context) -> String {
        let path = context.codingPath.map { $0.intValue.map(String.init) ?? $0.stringValue }
        return path.isEmpty ? "" : " at \(path.joined(separator: "."))"
    }

    private static func path(_ context: EncodingError.Context) -> String {
        let path = context.codingPath.map { $0.intValue.map(String.init) ?? $0.stringValue }
        return path.isEmpty ? "" : " at \(path.joined(separator: "."))"
    }
}
