#if Hummingbird
public import Hummingbird
public import HanekeProtocols
import HanekeServer

/// Answers a request that failed with a `StoreError` with the status the error calls for
/// (`StoreError.httpStatus`: `404` for a value that is not there, the upstream's `404` or `410`,
/// `502` for an upstream that failed, `503`, `504`), and a JSON body with the error's message;
/// any other error passes through unchanged.
///
/// ```swift
/// import Hummingbird
/// import HanekeHummingbird
///
/// let router = Router()
/// router.add(middleware: StoreErrorMiddleware())
/// ```
public struct StoreErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    /// Creates the middleware.
    public init() {}

    /// Runs the rest of the chain, and turns a `StoreError` into an HTTP error.
    /// - Parameters:
    ///   - request: The request.
    ///   - context: Its context.
    ///   - next: The rest of the chain.
    /// - Returns: The response.
    /// - Throws: `HTTPError` for a `StoreError`; any other error as it came.
    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as StoreError {
            throw HTTPError(error)
        }
    }
}

extension HTTPError {
    /// An HTTP error for a `StoreError`: its `httpStatus` and its `httpMessage`.
    /// - Parameter error: The error.
    public init(_ error: StoreError) {
        self.init(HTTPResponse.Status(code: error.httpStatus), message: error.httpMessage)
    }
}
#endif
