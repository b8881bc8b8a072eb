#if Vapor
public import Vapor
public import HanekeProtocols
import HanekeServer

/// Answers a request that failed with a `StoreError` with the status the error calls for
/// (`StoreError.httpStatus`: `404` for a value that is not there, the upstream's `404` or `410`,
/// `502` for an upstream that failed, `503`, `504`); any other error passes through unchanged.
/// Add it after Vapor's `ErrorMiddleware`, which then writes the response.
///
/// ```swift
/// import Vapor
/// import HanekeVapor
///
/// func configure(_ app: Application) {
///     app.middleware.use(StoreErrorMiddleware())
/// }
/// ```
public struct StoreErrorMiddleware: AsyncMiddleware {
    /// Creates the middleware.
    public init() {}

    /// Runs the rest of the chain, and turns a `StoreError` into an `Abort`.
    /// - Parameters:
    ///   - request: The request.
    ///   - next: The rest of the chain.
    /// - Returns: The response.
    /// - Throws: `Abort` for a `StoreError`; any other error as it came.
    public func respond(to request: Request, chainingTo next: any AsyncResponder) async throws -> Response {
        do {
            return try await next.respond(to: request)
        } catch let error as StoreError {
            throw Abort(error)
        }
    }
}

extension Abort {
    /// An `Abort` for a `StoreError`: its `httpStatus` and its `httpMessage`.
    /// - Parameter error: The error.
    public init(_ error: StoreError) {
        self.init(HTTPResponseStatus(statusCode: error.httpStatus), reason: error.httpMessage)
    }
}
#endif
