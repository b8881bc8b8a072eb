import CCurl
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import HanekeProtocols
import HTTPCaching
import Synchronization

/// `NetworkFetcher`'s GET through the system libcurl, driven directly rather than through
/// FoundationNetworking, so that each response is decoded where its limit counts.
///
/// Through `URLSession`, libcurl inflates a gzip body on the session's one thread, every session
/// of the process shares it, and nothing stops it while compressed bytes keep coming: its write
/// callback never aborts and `cancel()` waits for that thread. A gzip bomb held every other fetch
/// of the process for as long as it was sent. Here each transfer runs `curl_easy_perform` on a
/// thread of ``threads``: its write callback counts the decoded bytes (libcurl hands them over at
/// most 16 KiB at a time) and stops the transfer as soon as they pass the limit, and a bomb holds
/// up no other transfer.
///
/// libcurl follows no redirect itself: it would hand every custom field to whatever host a
/// `Location` names. ``perform(_:)`` follows them hop by hop on the same handle, each hop's URL and
/// fields decided by ``RedirectRules``.
enum CurlTransfer {
    /// `8 × ` the active processors, at least 32: transfers mostly wait for the network. More at
    /// once wait for a thread.
    static let threads = ThreadPool(width: max(32, 8 * ProcessInfo.processInfo.activeProcessorCount), name: "haneke.network")

    /// Easy handles of finished transfers, reset, kept with their connections open for the next.
    private static let idleHandles = Locked<[EasyHandle]>([])

    /// `curl_global_init(CURL_GLOBAL_DEFAULT)` (`CURL_GLOBAL_SSL | CURL_GLOBAL_WIN32`, 3: the
    /// macro does not reach Swift); FoundationNetworking calls it too, and libcurl counts the calls.
    private static let initialized: Bool = {
        curl_global_init(3) == CURLE_OK
    }()

    /// What a transfer received.
    struct Received: Sendable {
        var body: Data
        var response: HTTPURLResponse
    }

    /// GETs `url` with `headers`, following redirects by `redirects`, and collects at most
    /// `maximumBodySize` bytes of the body, decoded.
    /// - Parameters:
    ///   - url: The URL.
    ///   - headers: The caller's fields, checked already (``HeaderFieldCheck``).
    ///   - maximumBodySize: The most bytes a body may have, a redirect's too; `nil` for no limit.
    ///   - redirects: Which redirects are followed, and with which fields.
    ///   - shown: `url` as errors show it.
    ///   - redact: Shows another URL (a redirect's target) as errors may.
    /// - Throws: `StoreError` (`valueTooLarge`, `timeout`, `missingData`, `unavailable`, with the
    ///   ``Failure`` as its cause; `invalidStatusCode` with the redirect's status for a redirect
    ///   that is not followed), or `CancellationError` when the calling task is cancelled: the
    ///   fetch then resumes at once, and the transfer stops at libcurl's next progress call.
    static func get(
        _ url: URL, headers: HTTPHeaderFields, maximumBodySize: Int?, redirects: RedirectRules,
        shown: String, redact: @escaping @Sendable (String) -> String
    ) async throws -> Received {
        let transfer = Transfer(
            url: url, headers: headers, maximumBodySize: maximumBodySize, redirects: redirects, shown: shown, redact: redact
        )
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Received, any Error>) in
                transfer.waiting(continuation)
                threads.submit { transfer.finish(with: Result { try perform(transfer) }) }
            }
        } onCancel: {
            transfer.cancel()
        }
    }

    /// Runs the transfer on the calling thread (one of ``threads``): one `curl_easy_perform` per
    /// hop, on one handle (a redirect to the same host reuses the connection), each hop's URL and
    /// fields decided by the transfer's ``RedirectRules``.
    private static func perform(_ transfer: Transfer) throws -> Received {
        guard initialized else {
            throw StoreError(.unavailable, "GET \(transfer.shown) failed: libcurl could not be initialized")
        }
        guard !transfer.isCancelled else { throw CancellationError() }
        let handle = idleHandles.withLock { $0.popLast() } ?? EasyHandle()
        guard let raw = handle.raw else {
            throw StoreError(.unavailable, "GET \(transfer.shown) failed: libcurl gave no handle")
        }
        defer {
            curl_easy_reset(raw)
            idleHandles.withLock { if $0.count < threads.width { $0.append(handle) } }
        }
        configure(raw, for: transfer)
        var url = transfer.url
        var headers = transfer.headers
        var redirects = 0
        while true {
            transfer.startHop()
            let hop = try send(raw, url: url, headers: headers, for: transfer)
            guard hop.code == CURLE_OK, RedirectRules.followedStatuses.contains(hop.status), let location = hop.location else {
                return try transfer.outcome(code: hop.code, reason: hop.reason, status: hop.status, url: url)
            }
            guard !transfer.isCancelled else { throw CancellationError() }
            let answered = url == transfer.url ? "GET \(transfer.shown)" : "GET \(transfer.shown), redirected to \(transfer.redact(url.absoluteString)),"
            guard let target = URL(string: location) else {
                throw StoreError(
                    .invalidStatusCode,
                    "\(answered) answered \(hop.status) with a Location that is not a URL, which the fetcher does not follow",
                    statusCode: hop.status
                )
            }
            switch transfer.redirects.decision(from: url, to: target, headers: headers) {
            case .refuse(let reason):
                throw StoreError(
                    .invalidStatusCode,
                    "\(answered) answered \(hop.status) with a redirect to \(transfer.redact(target.absoluteString)), which the fetcher does not follow: \(reason)",
                    statusCode: hop.status
                )
            case .follow(let next, let kept):
                redirects += 1
                guard redirects <= RedirectRules.maximumRedirects else {
                    throw StoreError(.unavailable, "GET \(transfer.shown) was redirected more than \(RedirectRules.maximumRedirects) times")
                }
                url = next
                headers = kept
            }
        }
    }

    /// The options every hop of `transfer` shares.
    private static func configure(_ raw: UnsafeMutableRawPointer, for transfer: Transfer) {
        let context = Unmanaged.passUnretained(transfer).toOpaque()
        ccurl_setopt_long(raw, CURLOPT_HTTPGET, 1)
        // Never a signal from a resolver's timeout: the transfer runs on a thread of many.
        ccurl_setopt_long(raw, CURLOPT_NOSIGNAL, 1)
        ccurl_setopt_string(raw, CURLOPT_PROTOCOLS_STR, "http,https")
        // Redirects are followed by `perform`, which decides each hop's fields (RedirectRules).
        ccurl_setopt_long(raw, CURLOPT_FOLLOWLOCATION, 0)
        // Every encoding this libcurl decodes is offered, and decoded here, on this thread.
        ccurl_setopt_string(raw, CURLOPT_ACCEPT_ENCODING, "")
        ccurl_setopt_string(raw, CURLOPT_USERAGENT, "Haneke/\(HanekeVersion.string)")
        ccurl_setopt_long(raw, CURLOPT_CONNECTTIMEOUT_MS, 30_000)
        // An idle connection: under a byte a second for 30 seconds (as the session's
        // `timeoutIntervalForRequest` was); the whole request has its own deadline.
        ccurl_setopt_long(raw, CURLOPT_LOW_SPEED_LIMIT, 1)
        ccurl_setopt_long(raw, CURLOPT_LOW_SPEED_TIME, 30)
        ccurl_setopt_data_callback(raw, CURLOPT_WRITEFUNCTION, { data, size, count, context in
            guard let data, let context else { return ccurl_write_abort() }
            let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
            return transfer.receive(UnsafeRawBufferPointer(start: data, count: size * count)) ? size * count : ccurl_write_abort()
        })
        ccurl_setopt_pointer(raw, CURLOPT_WRITEDATA, context)
        ccurl_setopt_data_callback(raw, CURLOPT_HEADERFUNCTION, { data, size, count, context in
            guard let data, let context else { return ccurl_write_abort() }
            let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
            return transfer.receiveHeader(UnsafeRawBufferPointer(start: data, count: size * count)) ? size * count : ccurl_write_abort()
        })
        ccurl_setopt_pointer(raw, CURLOPT_HEADERDATA, context)
        ccurl_setopt_long(raw, CURLOPT_NOPROGRESS, 0)
        ccurl_setopt_progress_callback(raw, { context, _, _, _, _ in
            guard let context else { return 1 }
            return Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue().isCancelled ? 1 : 0
        })
        ccurl_setopt_pointer(raw, CURLOPT_XFERINFODATA, context)
    }

    /// What one hop ended with.
    private struct Hop {
        var code: CURLcode
        /// libcurl's error buffer.
        var reason: String
        /// `0` when the transfer failed.
        var status: Int
        /// For a `3xx` with a `Location`: where it leads, resolved against the hop's URL.
        var location: String?
    }

    /// GETs `url` with `headers` on `raw`, which ``configure(_:for:)`` set up, following no redirect.
    private static func send(_ raw: UnsafeMutableRawPointer, url: URL, headers: HTTPHeaderFields, for transfer: Transfer) throws -> Hop {
        var fields: UnsafeMutablePointer<curl_slist>?
        defer { curl_slist_free_all(fields) }
        for field in headers {
            guard let appended = curl_slist_append(fields, HeaderFieldCheck.curlLine(name: field.name, value: field.value)) else {
                throw StoreError(.outOfMemory, "GET \(transfer.shown) failed: libcurl could not allocate its list of header fields")
            }
            fields = appended
        }
        var errorText = [CChar](repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        let code = errorText.withUnsafeMutableBufferPointer { errorBuffer -> CURLcode in
            ccurl_setopt_string(raw, CURLOPT_URL, url.absoluteString)
            ccurl_setopt_slist(raw, CURLOPT_HTTPHEADER, fields)
            ccurl_setopt_pointer(raw, CURLOPT_ERRORBUFFER, errorBuffer.baseAddress)
            let code = curl_easy_perform(raw)
            // Neither pointer outlives this hop in the handle.
            ccurl_setopt_pointer(raw, CURLOPT_ERRORBUFFER, nil)
            ccurl_setopt_slist(raw, CURLOPT_HTTPHEADER, nil)
            return code
        }
        var hop = Hop(code: code, reason: errorText.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }, status: 0)
        guard code == CURLE_OK else { return hop }
        var status = 0
        ccurl_getinfo_long(raw, CURLINFO_RESPONSE_CODE, &status)
        hop.status = status
        var location: UnsafePointer<CChar>?
        // Set for a 3xx with a Location while libcurl follows none itself.
        if ccurl_getinfo_string(raw, CURLINFO_REDIRECT_URL, &location) == CURLE_OK, let location {
            hop.location = String(cString: location)
        }
        return hop
    }

    /// The error of a body that passed `maximum`, `received` bytes in.
    static func tooLarge(_ shown: String, maximum: Int, received: Int) -> StoreError {
        StoreError(.valueTooLarge, "GET \(shown) sent more than its maximumBodySize of \(maximum) bytes (\(received) bytes when it was stopped)")
    }

    /// What libcurl said of a transfer that failed: its error code and its explanation. The cause
    /// of the `StoreError` that `NetworkFetcher` throws for it.
    struct Failure: Error, Sendable, CustomStringConvertible {
        /// libcurl's `CURLcode`.
        var code: Int
        /// libcurl's message: its error buffer, or the code's general description.
        var reason: String

        var description: String { "\(reason) (libcurl error \(code))" }
    }
}

/// A libcurl easy handle: one transfer at a time, its connections kept between transfers.
/// `@unchecked Sendable`: it owns the C pointer, which only the one thread running its transfer
/// uses (a handle is taken from the idle list, used, reset and put back).
private final class EasyHandle: @unchecked Sendable {
    let raw: UnsafeMutableRawPointer?

    init() {
        raw = curl_easy_init()
    }

    deinit {
        if let raw { curl_easy_cleanup(raw) }
    }
}

/// One transfer: the fetch waiting for it, and what has arrived. libcurl's callbacks run on the
/// transfer's thread; the fetch's cancellation comes from another thread.
private final class Transfer: Sendable {
    /// The URL the caller asked for (a redirect's are the hops').
    let url: URL
    /// The caller's fields, sent to `url`.
    let headers: HTTPHeaderFields
    let redirects: RedirectRules
    let shown: String
    /// Shows a URL as errors may.
    let redact: @Sendable (String) -> String
    private let maximumBodySize: Int?
    private let cancelled = Atomic<Bool>(false)
    private let state = Locked(State())

    private struct State {
        var continuation: CheckedContinuation<CurlTransfer.Received, any Error>?
        /// The body of the hop under way (nothing of a redirect's).
        var body = Data()
        /// The bytes of the hop's body received, kept or not.
        var received = 0
        /// The status of the last response head received.
        var status = 0
        /// The fields of the last response head received (a `100 Continue`'s are replaced by the next).
        var fields: [(String, String)] = []
        var inHead = false
        /// Whether the head received is a redirect's, whose body is counted and dropped.
        var dropsBody = false
        /// Why the transfer was stopped from a callback.
        var stopped: StoreError?
    }

    init(
        url: URL, headers: HTTPHeaderFields, maximumBodySize: Int?, redirects: RedirectRules, shown: String,
        redact: @escaping @Sendable (String) -> String
    ) {
        self.url = url
        self.headers = headers
        self.maximumBodySize = maximumBodySize
        self.redirects = redirects
        self.shown = shown
        self.redact = redact
    }

    /// Forgets what the previous hop received.
    func startHop() {
        state.withLock { state in
            state.body = Data()
            state.received = 0
            state.status = 0
            state.fields = []
            state.inHead = false
            state.dropsBody = false
        }
    }

    var isCancelled: Bool { cancelled.load(ordering: .relaxed) }

    func waiting(_ continuation: CheckedContinuation<CurlTransfer.Received, any Error>) {
        let alreadyCancelled = state.withLock { state -> Bool in
            if isCancelled { return true }
            state.continuation = continuation
            return false
        }
        if alreadyCancelled { continuation.resume(throwing: CancellationError()) }
    }

    /// The fetch resumes now; the transfer stops at libcurl's next call of a callback.
    func cancel() {
        cancelled.store(true, ordering: .relaxed)
        state.withLock { $0.continuation.take() }?.resume(throwing: CancellationError())
    }

    func finish(with result: Result<CurlTransfer.Received, any Error>) {
        state.withLock { state in
            state.body = Data()
            return state.continuation.take()
        }?.resume(with: result)
    }

    /// Keeps a piece of the decoded body; `false` (stop) once the body passes the limit.
    func receive(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard !isCancelled else { return false }
        return state.withLock { state in
            state.received += bytes.count
            if let maximum = maximumBodySize, state.received > maximum {
                state.stopped = CurlTransfer.tooLarge(shown, maximum: maximum, received: state.received)
                state.body = Data()
                return false
            }
            if !state.dropsBody { state.body.append(bytes.assumingMemoryBound(to: UInt8.self)) }
            return true
        }
    }

    /// Keeps a line of a response head; `false` (stop) when a final response announces a body
    /// over the limit.
    func receiveHeader(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard !isCancelled else { return false }
        let line = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return state.withLock { state in
            if line.hasPrefix("HTTP/") {
                state.fields = []
                state.inHead = true
                state.status = line.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
                return true
            }
            guard !line.isEmpty else {
                state.inHead = false
                state.dropsBody = RedirectRules.followedStatuses.contains(state.status)
                    && state.fields.contains { $0.0.lowercased() == "location" }
                return announcedLengthFits(&state)
            }
            guard state.inHead, let colon = line.firstIndex(of: ":") else { return true }
            let name = line[..<colon].trimmingCharacters(in: .whitespaces)
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            state.fields.append((name, value))
            return true
        }
    }

    /// Refuses a head whose `Content-Length` passes the limit: a redirect's too, whose body is
    /// read (and dropped) before the next hop.
    private func announcedLengthFits(_ state: inout State) -> Bool {
        guard let maximum = maximumBodySize,
              let length = state.fields.last(where: { $0.0.lowercased() == "content-length" }).flatMap({ Int($0.1) }),
              length > maximum
        else { return true }
        state.stopped = StoreError(
            .valueTooLarge,
            "GET \(shown) announced \(length) bytes (Content-Length), more than its maximumBodySize of \(maximum) bytes"
        )
        return false
    }

    /// The transfer's result, from libcurl's code.
    func outcome(code: CURLcode, reason: String, status: Int, url: URL) throws -> CurlTransfer.Received {
        let (stopped, body, fields) = state.withLock { state in
            defer { state.body = Data() }
            return (state.stopped, state.body, state.fields)
        }
        if let stopped { throw stopped }
        if isCancelled { throw CancellationError() }
        guard code == CURLE_OK else { throw Self.error(code: code, reason: reason, shown: shown) }
        var headerFields: [String: String] = [:]
        for (name, value) in fields {
            if let existing = headerFields.first(where: { $0.key.lowercased() == name.lowercased() }) {
                headerFields[existing.key] = existing.value + ", " + value
            } else {
                headerFields[name] = value
            }
        }
        guard let response = HTTPURLResponse(url: url, statusCode: status, httpVersion: "HTTP/1.1", headerFields: headerFields) else {
            throw StoreError(.unavailable, "GET \(shown) gave no HTTP response")
        }
        return CurlTransfer.Received(body: body, response: response)
    }

    private static func error(code: CURLcode, reason: String, shown: String) -> StoreError {
        let explained = reason.isEmpty ? String(cString: curl_easy_strerror(code)) : reason
        let cause = CurlTransfer.Failure(code: Int(code.rawValue), reason: explained)
        switch code {
        case CURLE_OPERATION_TIMEDOUT:
            return StoreError(.timeout, "GET \(shown) timed out", cause: cause)
        case CURLE_PARTIAL_FILE, CURLE_RECV_ERROR, CURLE_GOT_NOTHING, CURLE_BAD_CONTENT_ENCODING, CURLE_HTTP2_STREAM, CURLE_HTTP2:
            return StoreError(.missingData, "GET \(shown) ended before its body was complete", cause: cause)
        default:
            return StoreError(.unavailable, "GET \(shown) failed", cause: cause)
        }
    }
}
