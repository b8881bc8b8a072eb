// The system liblz4 (Debian: liblz4-dev), seen from Swift through small static inline wrappers,
// and xxHash's XXH32 (Debian: libxxhash-dev), which checks a frame's content faster than the copy
// inside Debian's liblz4 (built for the baseline x86-64, it emulates XXH32's 32-bit multiplies with
// SSE2: 2.2 µs of the 2.9 µs it took to decode a 4 KiB frame, against 0.8 µs for libxxhash).
//
// The wrappers take `void *` rather than `char *`, so Swift passes raw buffer pointers without
// rebinding memory (as swift-crypto's CCryptoBoringSSLShims explains), and they fill the frame
// preferences in C, where the struct's layout is known. Only CompressedStore's Internal/LZ4.swift
// imports this module.

#ifndef HANEKE_CLZ4_SHIM_H
#define HANEKE_CLZ4_SHIM_H

#define LZ4F_STATIC_LINKING_ONLY
#include <lz4frame.h>
#include <stddef.h>
#include <stdint.h>
#include <xxhash.h>

/// Preferences for one frame: the content size and the content checksum are always set, so that
/// `lz4 -d` and this library can both verify what they decode.
static inline LZ4F_preferences_t clz4_preferences(int compressionLevel, int blockSizeID, int linkedBlocks,
                                                  unsigned long long contentSize) {
    LZ4F_preferences_t preferences = LZ4F_INIT_PREFERENCES;
    preferences.frameInfo.blockSizeID = (LZ4F_blockSizeID_t)blockSizeID;
    preferences.frameInfo.blockMode = linkedBlocks ? LZ4F_blockLinked : LZ4F_blockIndependent;
    preferences.frameInfo.contentChecksumFlag = LZ4F_contentChecksumEnabled;
    preferences.frameInfo.frameType = LZ4F_frame;
    preferences.frameInfo.contentSize = contentSize;
    preferences.compressionLevel = compressionLevel;
    return preferences;
}

static inline size_t clz4_compress_bound(size_t sourceSize, const LZ4F_preferences_t *preferences) {
    return LZ4F_compressFrameBound(sourceSize, preferences);
}

/// The corresponding C function is `LZ4F_compressFrame_usingCDict`, with no dictionary.
static inline size_t clz4_compress_frame(LZ4F_cctx *context, void *destination, size_t capacity,
                                         const void *source, size_t sourceSize,
                                         const LZ4F_preferences_t *preferences) {
    return LZ4F_compressFrame_usingCDict(context, destination, capacity, source, sourceSize, NULL, preferences);
}

static inline LZ4F_cctx *clz4_create_compression_context(void) {
    LZ4F_cctx *context = NULL;
    if (LZ4F_isError(LZ4F_createCompressionContext(&context, LZ4F_VERSION))) return NULL;
    return context;
}

static inline void clz4_free_compression_context(LZ4F_cctx *context) {
    LZ4F_freeCompressionContext(context);
}

static inline LZ4F_dctx *clz4_create_decompression_context(void) {
    LZ4F_dctx *context = NULL;
    if (LZ4F_isError(LZ4F_createDecompressionContext(&context, LZ4F_VERSION))) return NULL;
    return context;
}

static inline void clz4_free_decompression_context(LZ4F_dctx *context) {
    LZ4F_freeDecompressionContext(context);
}

/// Reads the frame header at the start of `source`. On success returns a hint (>= 0) and fills
/// `contentSize` (0 when the frame does not record it) and `hasContentSize`; `consumed` is the
/// header's length. The corresponding C function is `LZ4F_getFrameInfo`.
static inline size_t clz4_frame_header(LZ4F_dctx *context, const void *source, size_t sourceSize,
                                       size_t *consumed, unsigned long long *contentSize, int *blockSizeID) {
    LZ4F_frameInfo_t info;
    size_t size = sourceSize;
    size_t result = LZ4F_getFrameInfo(context, &info, source, &size);
    *consumed = size;
    if (!LZ4F_isError(result)) {
        *contentSize = info.contentSize;
        *blockSizeID = (int)info.blockSizeID;
    }
    return result;
}

/// Decompresses from `source` into `destination`; on return `destinationSize` and `sourceSize` hold
/// what was produced and consumed. Returns 0 at the end of the frame, a hint > 0 when more input is
/// expected, or an error code. `stable`: the caller promises that the output written so far stays
/// where it is, so liblz4 reads the history from it instead of keeping a copy. The corresponding C
/// function is `LZ4F_decompress`.
/// `skipChecksums`: liblz4 neither computes nor compares the frame's checksums (the caller checks
/// the content checksum itself, with ``clz4_xxh32``).
static inline size_t clz4_decompress(LZ4F_dctx *context, void *destination, size_t *destinationSize,
                                     const void *source, size_t *sourceSize, int stable, int skipChecksums) {
    LZ4F_decompressOptions_t options = { 0 };
    options.stableDst = stable ? 1u : 0u;
    options.skipChecksums = skipChecksums ? 1u : 0u;
    return LZ4F_decompress(context, destination, destinationSize, source, sourceSize, &options);
}

static inline size_t clz4_decompress_stable(LZ4F_dctx *context, void *destination, size_t *destinationSize,
                                            const void *source, size_t *sourceSize) {
    return clz4_decompress(context, destination, destinationSize, source, sourceSize, 1, 0);
}

static inline size_t clz4_decompress_stable_unchecked(LZ4F_dctx *context, void *destination, size_t *destinationSize,
                                                      const void *source, size_t *sourceSize) {
    return clz4_decompress(context, destination, destinationSize, source, sourceSize, 1, 1);
}

/// XXH32 with seed 0, the checksum of an LZ4 frame's content. The corresponding C function is
/// `XXH32`.
static inline uint32_t clz4_xxh32(const void *bytes, size_t length) {
    return XXH32(bytes, length, 0);
}

static inline size_t clz4_decompress_unstable(LZ4F_dctx *context, void *destination, size_t *destinationSize,
                                              const void *source, size_t *sourceSize) {
    return clz4_decompress(context, destination, destinationSize, source, sourceSize, 0, 0);
}

static inline int clz4_is_error(size_t code) {
    return LZ4F_isError(code) ? 1 : 0;
}

static inline const char *clz4_error_name(size_t code) {
    return LZ4F_getErrorName(code);
}

#endif
