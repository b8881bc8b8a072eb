// Direct liblz4 frame calls: the baseline the CompressedStore benchmark compares against.
#include <lz4frame.h>
#include <stddef.h>

static inline LZ4F_preferences_t baseline_preferences(unsigned long long contentSize) {
    LZ4F_preferences_t preferences = LZ4F_INIT_PREFERENCES;
    preferences.frameInfo.blockSizeID = LZ4F_max64KB;
    preferences.frameInfo.contentChecksumFlag = LZ4F_contentChecksumEnabled;
    preferences.frameInfo.contentSize = contentSize;
    return preferences;
}

static inline size_t baseline_compress(void *destination, size_t capacity, const void *source, size_t size) {
    LZ4F_preferences_t preferences = baseline_preferences(size);
    return LZ4F_compressFrame(destination, capacity, source, size, &preferences);
}

static inline size_t baseline_bound(size_t size) {
    LZ4F_preferences_t preferences = baseline_preferences(size);
    return LZ4F_compressFrameBound(size, &preferences);
}

static inline LZ4F_dctx *baseline_decompression_context(void) {
    LZ4F_dctx *context = NULL;
    LZ4F_createDecompressionContext(&context, LZ4F_VERSION);
    return context;
}

/// Decodes a whole frame into `destination` (which must hold it); returns the bytes produced, or 0.
static inline size_t baseline_decompress(LZ4F_dctx *context, void *destination, size_t capacity, const void *source, size_t size) {
    size_t produced = capacity;
    size_t consumed = size;
    size_t result = LZ4F_decompress(context, destination, &produced, source, &consumed, NULL);
    if (LZ4F_isError(result) || result != 0) {
        LZ4F_resetDecompressionContext(context);
        return 0;
    }
    return produced;
}
