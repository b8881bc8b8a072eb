import Foundation
import HanekeProtocols
internal import CLZ4

#if canImport(Glibc)
import Glibc
#endif

/// The LZ4 frame format through the system liblz4: the only Swift file that imports `CLZ4`, and no C
/// type leaves it.
enum LZ4 {
    /// Why a frame could not be made or read.
    enum Failure: Error, Equatable {
        case compression(String)
        case corrupted(String)
        /// An allocation failed: the frame may be whole.
        case outOfMemory(String)
        case limitExceeded(claimed: UInt64?, limit: Int)
    }

    /// One frame holding `data`, with its content size and content checksum, written as
    /// `configuration` says: the one place liblz4's preferences are made.
    /// The corresponding C function is `LZ4F_compressFrame_usingCDict`.
    static func compress(_ data: Data, configuration: CompressionConfiguration) throws(Failure) -> Data {
        var preferences = clz4_preferences(
            configuration.level.rawValue, configuration.blockSize.rawValue, configuration.linkedBlocks ? 1 : 0, UInt64(data.count)
        )
        let bound = clz4_compress_bound(data.count, &preferences)
        guard let output = malloc(max(bound, 1)) else { throw .outOfMemory("could not allocate \(bound) bytes") }
        let context: OpaquePointer
        do {
            context = try Contexts.takeCompression()
        } catch {
            Glibc.free(output)
            throw error
        }
        defer { Contexts.giveBack(compression: context) }
        let written = data.withUnsafeBytes { source in
            // An empty `Data` may have no address; liblz4 wants one even for zero bytes.
            clz4_compress_frame(context, output, bound, source.baseAddress ?? UnsafeRawPointer(output), source.count, &preferences)
        }
        if clz4_is_error(written) != 0 {
            free(output)
            throw .compression(String(cString: clz4_error_name(written)))
        }
        return takeOwnership(of: output, count: written, allocated: bound)
    }

    /// The bytes of the single frame `frame`, refusing (before allocating) any frame that claims more
    /// than `limit` bytes, and any frame that is damaged, truncated, fails its checksum, or is
    /// followed by other bytes. The corresponding C function is `LZ4F_decompress`.
    static func decompress(_ frame: Data, limit: Int) throws(Failure) -> Data {
        let context = try Contexts.takeDecompression()
        let outcome = frame.withUnsafeBytes { (source: UnsafeRawBufferPointer) -> Result<Data, Failure> in
            Result { () throws(Failure) -> Data in try decompress(source, limit: limit, context: context) }
        }
        // A context that stopped in the middle of a frame is freed, not reused: liblz4 1.9.4's
        // reset leaves the frame's remaining size behind, and the next frame without a recorded
        // size then fails with ERROR_frameSize_wrong (seen in the tests).
        switch outcome {
        case .success: Contexts.giveBack(decompression: context)
        case .failure: Contexts.free(decompression: context)
        }
        return try outcome.get()
    }

    private static func decompress(_ source: UnsafeRawBufferPointer, limit: Int, context: OpaquePointer) throws(Failure) -> Data {
        guard let sourceBase = source.baseAddress, !source.isEmpty else { throw .corrupted("empty input, not an LZ4 frame") }
        var headerLength = 0
        var contentSize: UInt64 = 0
        var blockSizeID: Int32 = 0
        let result = clz4_frame_header(context, sourceBase, source.count, &headerLength, &contentSize, &blockSizeID)
        if clz4_is_error(result) != 0 {
            throw .corrupted("bad frame header: \(String(cString: clz4_error_name(result)))")
        }
        if contentSize > 0 {
            guard contentSize <= UInt64(limit) else { throw .limitExceeded(claimed: contentSize, limit: limit) }
            guard let checksum = contentChecksumCheckedHere(source, headerLength: headerLength) else {
                return try decodeBlocks(from: source, at: headerLength, capacity: Int(contentSize), growingTo: nil, context: context)
            }
            let content = try decodeBlocks(
                from: source, at: headerLength, capacity: Int(contentSize), growingTo: nil, checkingChecksums: false, context: context
            )
            guard content.withUnsafeBytes({ clz4_xxh32($0.baseAddress, $0.count) }) == checksum else {
                throw .corrupted("the content checksum does not match")
            }
            return content
        }
        // No recorded size (as the `lz4` tool writes from a pipe): grow the output, up to the limit.
        let start = min(limit, max(64 << 10, source.count.multipliedReportingOverflow(by: 4).partialValue))
        return try decodeBlocks(from: source, at: headerLength, capacity: start, growingTo: limit, context: context)
    }

    /// The content checksum that closes `source`, when this file checks it rather than liblz4 (with
    /// libxxhash's XXH32, three times as fast here): a standard frame whose flags say it has one and
    /// no block checksums. `nil` for any other frame, which liblz4 checks whole: skipping its
    /// checksums would then skip the block checksums too.
    private static func contentChecksumCheckedHere(_ source: UnsafeRawBufferPointer, headerLength: Int) -> UInt32? {
        // The magic number (04 22 4D 18), then the FLG byte: bit 4 block checksums, bit 2 content checksum.
        guard source.count >= headerLength + 8, source.starts(with: [0x04, 0x22, 0x4D, 0x18]) else { return nil }
        let flags = source[4]
        guard flags & 0x10 == 0, flags & 0x04 != 0 else { return nil }
        let end = source.count
        return UInt32(source[end - 4]) | UInt32(source[end - 3]) << 8 | UInt32(source[end - 2]) << 16 | UInt32(source[end - 1]) << 24
    }

    /// The content size a frame's header records, read and checked by liblz4 (`LZ4F_getFrameInfo`,
    /// which verifies the header checksum); `nil` when the header is invalid or records no size.
    static func recordedContentSize(of header: Data) -> UInt64? {
        guard let context = try? Contexts.takeDecompression() else { return nil }
        // The context stops after a header: free it rather than reuse it (see `decompress`).
        defer { Contexts.free(decompression: context) }
        return header.withUnsafeBytes { source -> UInt64? in
            guard let base = source.baseAddress else { return nil }
            var headerLength = 0
            var contentSize: UInt64 = 0
            var blockSizeID: Int32 = 0
            let result = clz4_frame_header(context, base, source.count, &headerLength, &contentSize, &blockSizeID)
            return clz4_is_error(result) != 0 || contentSize == 0 ? nil : contentSize
        }
    }

    /// Decodes the blocks after the header. With a known size (`growingTo == nil`) the output is
    /// exactly that size and stays put, so liblz4 decodes straight into it with no temporary buffers
    /// and the frame must fill it exactly. Otherwise the output doubles as needed up to the limit;
    /// since it may then move, liblz4 keeps its own copy of the history.
    private static func decodeBlocks(
        from source: UnsafeRawBufferPointer,
        at start: Int,
        capacity initialCapacity: Int,
        growingTo limit: Int?,
        checkingChecksums: Bool = true,
        context: OpaquePointer
    ) throws(Failure) -> Data {
        var capacity = initialCapacity
        // A value of known size between 1 KiB and 64 KiB goes into a slot of the shared slabs, whose
        // memory is ready before it is needed (a memory layer may keep the value: see `ValueSlabs`).
        let slot = limit == nil ? ValueSlabs.shared.allocate(capacity) : nil
        guard var output = slot ?? malloc(max(capacity, 1)) else { throw .outOfMemory("could not allocate \(capacity) bytes") }
        var produced = 0
        var consumed = start
        do throws(Failure) {
            while true {
                if produced == capacity, let limit {
                    guard capacity < limit else { throw Failure.limitExceeded(claimed: nil, limit: limit) }
                    capacity = min(limit, capacity * 2)
                    guard let grown = realloc(output, capacity) else { throw Failure.outOfMemory("could not allocate \(capacity) bytes") }
                    output = grown
                }
                var outputSize = capacity - produced
                var inputSize = source.count - consumed
                let hint = limit != nil
                    ? clz4_decompress_unstable(context, output + produced, &outputSize, source.baseAddress! + consumed, &inputSize)
                    : checkingChecksums
                    ? clz4_decompress_stable(context, output + produced, &outputSize, source.baseAddress! + consumed, &inputSize)
                    : clz4_decompress_stable_unchecked(context, output + produced, &outputSize, source.baseAddress! + consumed, &inputSize)
                if clz4_is_error(hint) != 0 { throw Failure.corrupted(String(cString: clz4_error_name(hint))) }
                produced += outputSize
                consumed += inputSize
                if hint == 0 { break }
                let outputFull = produced == capacity && limit != nil
                if (consumed == source.count && !outputFull) || (inputSize == 0 && outputSize == 0 && !outputFull) {
                    throw Failure.corrupted("the frame is truncated (\(source.count) bytes)")
                }
            }
            guard consumed == source.count else { throw Failure.corrupted("\(source.count - consumed) bytes follow the end of the frame") }
            guard limit != nil || produced == capacity else {
                throw Failure.corrupted("the frame announces \(capacity) bytes but holds \(produced)")
            }
        } catch {
            if slot != nil { ValueSlabs.shared.release(output) } else { free(output) }
            throw error
        }
        // A slot holds exactly the frame's recorded size, which the frame filled (checked above).
        if slot != nil { return ValueSlabs.shared.data(owning: output, count: produced) }
        return takeOwnership(of: output, count: produced, allocated: capacity)
    }

    /// Wraps a `malloc`ed buffer in `Data` without copying, giving back unused memory first.
    private static func takeOwnership(of buffer: UnsafeMutableRawPointer, count: Int, allocated: Int) -> Data {
        guard count > 0 else {
            free(buffer)
            return Data()
        }
        var buffer = buffer
        if count < allocated / 2, let shrunk = realloc(buffer, count) {
            buffer = shrunk
        }
        return Data(bytesNoCopy: buffer, count: count, deallocator: .free)
    }

    // MARK: - Contexts

    /// liblz4 contexts, cached one per thread (pthread thread-specific data): creating one costs more
    /// than compressing a small value, and a per-thread cache needs no lock. A context is taken out of
    /// its thread's slot while in use and put back after a success; one that stopped half-way through
    /// a frame is freed instead (see `decompress`). A thread's contexts are freed when it exits.
    enum Contexts {
        static let compressionSlot: pthread_key_t? = {
            var key = pthread_key_t()
            let status = pthread_key_create(&key) { pointer in
                if let pointer { clz4_free_compression_context(OpaquePointer(pointer)) }
            }
            return status == 0 ? key : nil
        }()

        static let decompressionSlot: pthread_key_t? = {
            var key = pthread_key_t()
            let status = pthread_key_create(&key) { pointer in
                if let pointer { clz4_free_decompression_context(OpaquePointer(pointer)) }
            }
            return status == 0 ? key : nil
        }()

        static func takeCompression() throws(Failure) -> OpaquePointer {
            if let cached = take(from: compressionSlot) { return cached }
            guard let context = clz4_create_compression_context() else { throw .outOfMemory("liblz4 could not create a context") }
            return context
        }

        static func giveBack(compression context: OpaquePointer) {
            if !put(context, in: compressionSlot) { clz4_free_compression_context(context) }
        }

        static func takeDecompression() throws(Failure) -> OpaquePointer {
            if let cached = take(from: decompressionSlot) { return cached }
            guard let context = clz4_create_decompression_context() else { throw .outOfMemory("liblz4 could not create a context") }
            return context
        }

        static func giveBack(decompression context: OpaquePointer) {
            if !put(context, in: decompressionSlot) { clz4_free_decompression_context(context) }
        }

        static func free(decompression context: OpaquePointer) {
            clz4_free_decompression_context(context)
        }

        private static func take(from slot: pthread_key_t?) -> OpaquePointer? {
            guard let slot, let pointer = pthread_getspecific(slot) else { return nil }
            pthread_setspecific(slot, nil)
            return OpaquePointer(pointer)
        }

        private static func put(_ context: OpaquePointer, in slot: pthread_key_t?) -> Bool {
            guard let slot, pthread_getspecific(slot) == nil else { return false }
            return pthread_setspecific(slot, UnsafeRawPointer(context)) == 0
        }
    }
}
