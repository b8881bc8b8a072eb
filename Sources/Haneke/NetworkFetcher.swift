public import Foundation
#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif
@_spi(HanekeInternals) public import HanekeProtocols
import Logging

/// Fetches values over HTTP with `URLSession` (FoundationNetworking on Linux: the system's libcurl,
/// no extra dependency).
///
/// - Only 200 and 201 are successes; any other status throws `StoreError` code `invalidStatusCode`,
///   with the status in `statusCode`. Failed responses are never cached.
/// - An empty body, or one shorter than its `Content-Length`, throws `missingData`.
/// - Cancelling the task cancels the request.
/// - The default session is ephemeral with its URL cache turned off, so nothing is cached behind
///   the cache's own layers (and nothing is written under `~/.cache` by libcurl's cache).
///
/// ```swift
/// let user = try await cache.fetch(key: "haneke", fetcher: NetworkFetcher<JSON>(url: userURL))
/// let pages = MemoryStore<String, Data>().fetching(from: NetworkFetcher<Data>())   // keys are URLs
/// ```
public struct NetworkFetcher<Value: DataConvertible & Sendable>: Fetcher {
    /// The URL every fetch requests, or `nil` to request the key itself as a URL.
    public let url: URL?
    private let session: URLSession

    /// Creates a fetcher.
    /// - Parameters:
    ///   - url: The URL to request whatever the key; `nil` (the default) requests the key as a URL.
    ///   - session: The session; an ephemeral one without a URL cache by default.
    public init(url: URL? = nil, session: URLSession = NetworkFetcherSession.shared) {
        self.url = url
        self.session = session
    }

    /// The key a cache should store this fetcher's value under: its URL's absolute string.
    public var key: String? { url?.absoluteString }

    /// Requests the URL (or `key` as a URL) and decodes the body.
    /// - Parameter key: The cache key; used as the URL when the fetcher has none.
    /// - Returns: The decoded body.
    /// - Throws: `StoreError` (`invalidKey`, `invalidStatusCode`, `missingData`, `decoding`,
    ///   `unavailable`, `timeout`) or `CancellationError`.
    public func fetch(_ key: String) async throws -> Value {
        guard let target = url ?? URL(string: key), target.scheme == "http" || target.scheme == "https" else {
            throw StoreError(.invalidKey, "\(Logger.describe(key)) is not an http or https URL")
        }
        var request = URLRequest(url: target)
        request.cachePolicy = .reloadIgnoringLocalAndRemoteCacheData
        let (data, response) = try await load(request)
        guard let http = response as? HTTPURLResponse else {
            throw StoreError(.unavailable, "GET \(target.absoluteString) gave no HTTP response")
        }
        guard http.statusCode == 200 || http.statusCode == 201 else {
            throw StoreError(
                .invalidStatusCode,
                "GET \(target.absoluteString) answered \(http.statusCode) \(HTTPURLResponse.localizedString(forStatusCode: http.statusCode))",
                statusCode: http.statusCode
            )
        }
        guard !data.isEmpty else {
            throw StoreError(.missingData, "GET \(target.absoluteString) answered \(http.statusCode) with an empty body")
        }
        // A compressed body (Content-Encoding) arrives decompressed, so its length differs from the
        // announced one; libcurl itself reports such a body cut short (CURLE_PARTIAL_FILE).
        if http.value(forHTTPHeaderField: "Content-Encoding") == nil,
           http.expectedContentLength > 0, Int64(data.count) < http.expectedContentLength {
            throw StoreError(.missingData, "GET \(target.absoluteString) sent \(data.count) of the \(http.expectedContentLength) bytes it announced")
        }
        do {
            return try Value.convertFromData(data)
        } catch {
            throw StoreError.wrapping(error, as: .decoding, "The body of GET \(target.absoluteString) (\(data.count) bytes) does not decode as \(Value.self)")
        }
    }

    /// Runs a data task, cancelling it when the calling task is cancelled.
    private func load(_ request: URLRequest) async throws -> (Data, URLResponse) {
        let box = TaskBox()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<(Data, URLResponse), any Error>) in
                let task = session.dataTask(with: request) { data, response, error in
                    if let error {
                        continuation.resume(throwing: Self.storeError(for: error, request: request))
                    } else if let response {
                        continuation.resume(returning: (data ?? Data(), response))
                    } else {
                        continuation.resume(throwing: StoreError(.unavailable, "GET \(request.url?.absoluteString ?? "?") gave no response"))
                    }
                }
                box.start(task)
            }
        } onCancel: {
            box.cancel()
        }
    }

    private static func storeError(for error: any Error, request: URLRequest) -> any Error {
        let url = request.url?.absoluteString ?? "?"
        guard let urlError = error as? URLError else {
            return StoreError(.unavailable, "GET \(url) failed: \(error)", cause: error)
        }
        switch urlError.code {
        case .cancelled:
            return CancellationError()
        case .timedOut:
            return StoreError(.timeout, "GET \(url) timed out", cause: error)
        case .networkConnectionLost, .cannotParseResponse, .zeroByteResource:
            return StoreError(.missingData, "GET \(url) ended before its body was complete: \(urlError.localizedDescription)", cause: error)
        case .unknown where urlError.localizedDescription.contains("bytes remaining to read"):
            // libcurl's CURLE_PARTIAL_FILE ("transfer closed with N bytes remaining to read"), which
            // FoundationNetworking passes on as an unknown error: a body shorter than its Content-Length.
            return StoreError(.missingData, "GET \(url) ended before its body was complete: \(urlError.localizedDescription)", cause: error)
        default:
            return StoreError(.unavailable, "GET \(url) failed: \(urlError.localizedDescription)", cause: error)
        }
    }
}

/// The shared session of `NetworkFetcher`: ephemeral, with no URL cache and no cookies.
public enum NetworkFetcherSession {
    /// An ephemeral session whose URL cache is off, so responses are cached only by Haneke.
    public static let shared: URLSession = {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalAndRemoteCacheData
        configuration.httpCookieStorage = nil
        configuration.timeoutIntervalForRequest = 30
        return URLSession(configuration: configuration)
    }()
}

/// Holds a data task so a cancellation that arrives before the task exists still cancels it.
private final class TaskBox: Sendable {
    private let state = Locked<(task: URLSessionDataTask?, cancelled: Bool)>((nil, false))

    func start(_ task: URLSessionDataTask) {
        let cancelled = state.withLock { state in
            state.task = task
            return state.cancelled
        }
        if cancelled { task.cancel() }
        task.resume()
    }

    func cancel() {
        state.withLock { state in
            state.cancelled = true
            return state.task
        }?.cancel()
    }
}
