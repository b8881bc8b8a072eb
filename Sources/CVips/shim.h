// The system libvips (Debian: libvips-dev, 8.14), seen from Swift through small static inline wrappers.
//
// libvips passes optional arguments as C varargs ended by NULL
// (`vips_thumbnail_buffer(buf, len, &out, width, "height", h, "size", ..., NULL)`), which Swift cannot
// call: each wrapper makes one such call with its arguments fixed, so that Swift sees plain C
// functions. Buffers are `const void *`, so Swift passes raw pointers without rebinding memory (as
// swift-crypto's CCryptoBoringSSLShims explains). Only Images' Internal/Vips.swift imports this
// module.
//
// The libvips functions used are declared below rather than taken from <vips/vips.h>: that header
// needs GLib's include folders, which only pkg-config knows, and SwiftPM reading vips.pc (for the
// `pkgConfig:` of the target) warns "prohibited flag(s): -pthread" on every build of this package —
// and of every package that depends on it, images or not. scripts/check-vips-shim compiles this
// file after the real <vips/vips.h> (`make test` runs it), so a declaration or a constant that does
// not match libvips's own fails there. Only <vips/version.h>, which needs nothing else, is included:
// without libvips-dev the build stops at that line.

#ifndef HANEKE_CVIPS_SHIM_H
#define HANEKE_CVIPS_SHIM_H

#include <vips/version.h>
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <time.h>

#if VIPS_MAJOR_VERSION < 8 || (VIPS_MAJOR_VERSION == 8 && VIPS_MINOR_VERSION < 13)
#error "The Images module needs libvips 8.13 or later (Debian: libvips-dev)"
#endif

// MARK: - The part of libvips's API used here (libvips 8.13+, GLib 2)

typedef struct _VipsImage VipsImage;
typedef struct _VipsArea VipsArea;
typedef struct _VipsArrayDouble VipsArrayDouble;

int vips_init(const char *argv0);
void vips_concurrency_set(int concurrency);
void vips_cache_set_max(int max);
void vips_cache_set_max_mem(size_t max_mem);
void vips_cache_set_max_files(int max_files);
void vips_block_untrusted_set(int state);
char *vips_error_buffer_copy(void);

VipsImage *vips_image_new_from_buffer(const void *buf, size_t len, const char *option_string, ...);
int vips_image_get_width(const VipsImage *image);
int vips_image_get_height(const VipsImage *image);
int vips_image_get_format(const VipsImage *image);
int vips_image_get_bands(const VipsImage *image);
unsigned long vips_format_sizeof(int format);
void vips_image_set_kill(VipsImage *image, int kill);
int vips_image_hasalpha(VipsImage *image);
int vips_image_get_orientation(VipsImage *image);
unsigned long vips_image_get_typeof(const VipsImage *image, const char *name);
int vips_image_get_string(const VipsImage *image, const char *name, const char **out);

int vips_getpoint(VipsImage *in, double **vector, int *n, int x, int y, ...);
int vips_thumbnail_buffer(void *buf, size_t len, VipsImage **out, int width, ...);
int vips_thumbnail_image(VipsImage *in, VipsImage **out, int width, ...);
int vips_flatten(VipsImage *in, VipsImage **out, ...);
VipsArrayDouble *vips_array_double_new(const double *array, int n);
void vips_area_unref(VipsArea *area);
int vips_jpegsave_buffer(VipsImage *in, void **buf, size_t *len, ...);
int vips_pngsave_buffer(VipsImage *in, void **buf, size_t *len, ...);
int vips_webpsave_buffer(VipsImage *in, void **buf, size_t *len, ...);

void g_object_unref(void *object);
void g_free(void *mem);

/// GLib's log handler (`GLogFunc`, its level flags as an int) and the call that installs one for a
/// log domain.
typedef void (*cvips_log_func)(const char *log_domain, int log_level, const char *message, void *user_data);
unsigned int g_log_set_handler(const char *log_domain, int log_levels, cvips_log_func log_func, void *user_data);

/// libvips's enumerations, as their values (scripts/check-vips-shim compares them with the header's).
enum {
    CVIPS_ACCESS_SEQUENTIAL = 1,    // VIPS_ACCESS_SEQUENTIAL
    CVIPS_INTERESTING_NONE = 0,     // VIPS_INTERESTING_NONE
    CVIPS_INTERESTING_CENTRE = 1,   // VIPS_INTERESTING_CENTRE
    CVIPS_SIZE_BOTH = 0,            // VIPS_SIZE_BOTH
    CVIPS_SIZE_FORCE = 3,           // VIPS_SIZE_FORCE
    CVIPS_FORMAT_USHORT = 2,        // VIPS_FORMAT_USHORT
    CVIPS_LOG_LEVEL_WARNING = 1 << 4,   // G_LOG_LEVEL_WARNING
    CVIPS_LOG_LEVEL_MESSAGE = 1 << 5,   // G_LOG_LEVEL_MESSAGE
    CVIPS_LOG_LEVEL_INFO = 1 << 6,      // G_LOG_LEVEL_INFO
};

/// libvips's names for an embedded ICC profile and for the loader that read an image.
#define CVIPS_META_ICC_NAME "icc-profile-data"
#define CVIPS_META_LOADER "vips-loader"

// MARK: - Wrappers

/// Starts libvips once per process (the caller makes sure of "once") with its warnings sent to
/// `log`, and applies the settings the Images module chose: `concurrency` worker threads per image
/// (0 leaves libvips's own choice, which follows `VIPS_CONCURRENCY`), no operation cache, and no
/// loader that libvips marks as untrusted.
/// Returns 0, or -1 with the reason in libvips's error buffer.
static inline int cvips_start(const char *program, int concurrency, cvips_log_func log) {
    // libvips's warnings and messages (log domain "VIPS") go to `log` rather than to standard
    // error, where GLib's default handler writes them.
    g_log_set_handler("VIPS", CVIPS_LOG_LEVEL_WARNING | CVIPS_LOG_LEVEL_MESSAGE | CVIPS_LOG_LEVEL_INFO, log, NULL);
    if (vips_init(program) != 0) return -1;
    if (concurrency > 0) vips_concurrency_set(concurrency);
    // The operation cache would keep recent operations, their decoded images and the buffers they
    // read from, alive after each call.
    vips_cache_set_max(0);
    vips_cache_set_max_mem(0);
    vips_cache_set_max_files(0);
    vips_block_untrusted_set(1);
    return 0;
}

/// What the header of an encoded image says, read without decoding a pixel.
typedef struct {
    /// The size as stored, before the EXIF orientation is applied.
    int width;
    int height;
    int has_alpha;
    /// The EXIF orientation, 1 to 8 (1 when the file has none).
    int orientation;
    int has_icc_profile;
    /// The bytes a decoded pixel takes: its bands times the size of a sample.
    int bytes_per_pixel;
    /// The loader libvips chose, such as "jpegload_buffer"; empty if it did not say.
    char loader[64];
} cvips_header;

/// Reads the header of the encoded image in `data`: libvips opens images lazily, so no pixel is
/// decoded. Returns 0, or -1 with the reason in libvips's error buffer.
/// The corresponding C function is `vips_image_new_from_buffer`.
static inline int cvips_read_header(const void *data, size_t length, cvips_header *header) {
    VipsImage *image = vips_image_new_from_buffer(data, length, "", "access", CVIPS_ACCESS_SEQUENTIAL, NULL);
    if (image == NULL) return -1;
    header->width = vips_image_get_width(image);
    header->height = vips_image_get_height(image);
    header->has_alpha = vips_image_hasalpha(image) ? 1 : 0;
    header->orientation = vips_image_get_orientation(image);
    header->has_icc_profile = vips_image_get_typeof(image, CVIPS_META_ICC_NAME) != 0 ? 1 : 0;
    header->bytes_per_pixel = vips_image_get_bands(image) * (int)vips_format_sizeof(vips_image_get_format(image));
    const char *loader = NULL;
    header->loader[0] = '\0';
    if (vips_image_get_typeof(image, CVIPS_META_LOADER) != 0 &&
        vips_image_get_string(image, CVIPS_META_LOADER, &loader) == 0 && loader != NULL) {
        snprintf(header->loader, sizeof header->loader, "%s", loader);
    }
    g_object_unref(image);
    return 0;
}

enum { CVIPS_JPEG = 0, CVIPS_PNG = 1, CVIPS_WEBP = 2 };

/// One resize: the output's size (upright), how to reach it, and how to encode it.
typedef struct {
    int width;
    int height;
    /// 1: scale to cover the size and keep its centre; 0: scale to exactly the size.
    int crop;
    /// 1: convert the pixels from the embedded ICC profile to sRGB.
    int to_srgb;
    /// CVIPS_JPEG, CVIPS_PNG or CVIPS_WEBP.
    int format;
    /// 1 to 100, for JPEG and WebP.
    int quality;
    /// The most microseconds the resize may take, from the call on; 0 for no limit.
    long time_limit_us;
    /// 1 for a format whose decoding shrinks (JPEG, WebP): `vips_thumbnail_buffer` opens it.
    int shrinks_on_load;
} cvips_resize_request;

/// The encoded output of a resize; `data` is libvips's, released with `cvips_free`.
typedef struct {
    void *data;
    size_t length;
    int width;
    int height;
    int has_alpha;
    /// 1 when the resize was stopped because it took longer than `time_limit_us`.
    int timed_out;
} cvips_resize_result;


/// A resize's time limit: a thread that waits until the deadline (on the monotonic clock) unless
/// the resize ends first, and then kills the image being computed (`vips_image_set_kill`): libvips
/// checks that flag each time it prepares a region of the image, so the resize stops within a
/// strip of it and fails with "killed". The resizing thread also reads the clock itself, before
/// it computes pixels and when it is done: on a busy machine the watch thread may not run until
/// long after its deadline, and a resize that took longer than its limit fails all the same.
typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t changed;
    struct timespec deadline;
    /// The image to kill at the deadline; NULL until there is one.
    VipsImage *target;
    int done;
    int expired;
    pthread_t thread;
    int started;
} cvips_watch;

static void *cvips_watch_run(void *argument) {
    cvips_watch *watch = (cvips_watch *)argument;
    pthread_mutex_lock(&watch->lock);
    while (!watch->done && !watch->expired) {
        if (pthread_cond_timedwait(&watch->changed, &watch->lock, &watch->deadline) == ETIMEDOUT) {
            watch->expired = 1;
            if (watch->target != NULL) vips_image_set_kill(watch->target, 1);
        }
    }
    pthread_mutex_unlock(&watch->lock);
    return NULL;
}

/// Starts watching `limit_us` microseconds from now; returns 0, or -1 when no thread could start
/// (the resize then runs without a limit).
static inline int cvips_watch_start(cvips_watch *watch, long limit_us) {
    watch->target = NULL;
    watch->done = 0;
    watch->expired = 0;
    watch->started = 0;
    pthread_condattr_t attributes;
    pthread_condattr_init(&attributes);
    pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC);
    pthread_cond_init(&watch->changed, &attributes);
    pthread_condattr_destroy(&attributes);
    pthread_mutex_init(&watch->lock, NULL);
    clock_gettime(CLOCK_MONOTONIC, &watch->deadline);
    watch->deadline.tv_sec += limit_us / 1000000;
    watch->deadline.tv_nsec += (limit_us % 1000000) * 1000;
    if (watch->deadline.tv_nsec >= 1000000000) {
        watch->deadline.tv_sec += 1;
        watch->deadline.tv_nsec -= 1000000000;
    }
    if (pthread_create(&watch->thread, NULL, cvips_watch_run, watch) != 0) return -1;
    watch->started = 1;
    return 0;
}

/// Whether the monotonic clock has reached the watch's deadline; call with the lock held.
static inline int cvips_watch_passed(const cvips_watch *watch) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return now.tv_sec > watch->deadline.tv_sec
        || (now.tv_sec == watch->deadline.tv_sec && now.tv_nsec >= watch->deadline.tv_nsec);
}

/// Makes `image` the one killed at the deadline (at once if it has passed, whether or not the
/// watch thread has run yet); returns whether the deadline has passed.
static inline int cvips_watch_target(cvips_watch *watch, VipsImage *image) {
    if (!watch->started) return 0;
    pthread_mutex_lock(&watch->lock);
    watch->target = image;
    if (!watch->expired && cvips_watch_passed(watch)) watch->expired = 1;
    if (watch->expired && image != NULL) vips_image_set_kill(image, 1);
    int expired = watch->expired;
    pthread_mutex_unlock(&watch->lock);
    return expired;
}

/// Ends the watch, before the images it may kill go; returns whether the deadline had passed
/// (by the clock, even if the watch thread never ran).
static inline int cvips_watch_stop(cvips_watch *watch) {
    if (!watch->started) return 0;
    pthread_mutex_lock(&watch->lock);
    if (!watch->expired && cvips_watch_passed(watch)) watch->expired = 1;
    watch->done = 1;
    watch->target = NULL;
    pthread_cond_signal(&watch->changed);
    pthread_mutex_unlock(&watch->lock);
    pthread_join(watch->thread, NULL);
    pthread_cond_destroy(&watch->changed);
    pthread_mutex_destroy(&watch->lock);
    watch->started = 0;
    return watch->expired;
}

/// Decodes `data` (shrinking on load where the format allows), applies its EXIF orientation,
/// converts it to sRGB, resizes it as `request` says, flattens its alpha onto white for JPEG, and
/// encodes it without metadata. A truncated or damaged input fails (libvips's `fail_on=error`).
///
/// With a time limit, a watch thread kills the image being computed at the deadline. A JPEG or a
/// WebP goes through `vips_thumbnail_buffer`, which shrinks it while it decodes: the watch kills
/// the thumbnail, so the resize stops at its next strip. Any other format (a PNG, whose decoding
/// cannot shrink, is where the time goes) is opened here and resized with `vips_thumbnail_image`:
/// the watch kills the decoded image itself, so the resize stops within a strip of the input.
/// Returns 0, or -1 with the reason in libvips's error buffer (`timed_out` set when the time limit
/// stopped it).
/// The corresponding C functions are `vips_thumbnail_buffer`, `vips_image_new_from_buffer` and
/// `vips_thumbnail_image`, `vips_flatten` and `vips_jpegsave_buffer`, `vips_pngsave_buffer` or
/// `vips_webpsave_buffer`.
static inline int cvips_resize(const void *data, size_t length, const cvips_resize_request *request,
                               cvips_resize_result *result) {
    cvips_watch watch;
    result->timed_out = 0;
    result->data = NULL;
    result->length = 0;
    if (request->time_limit_us > 0) cvips_watch_start(&watch, request->time_limit_us);
    else watch.started = 0;
    VipsImage *input = NULL;
    VipsImage *thumbnail = NULL;
    int crop = request->crop ? CVIPS_INTERESTING_CENTRE : CVIPS_INTERESTING_NONE;
    int size = request->crop ? CVIPS_SIZE_BOTH : CVIPS_SIZE_FORCE;
    int status;
    if (request->shrinks_on_load || !watch.started) {
        // Without an embedded profile the pixels are taken as sRGB already: asking for an sRGB
        // export would send them through an ICC round trip for nothing.
        status = request->to_srgb
            ? vips_thumbnail_buffer((void *)data, length, &thumbnail, request->width, "height", request->height,
                                    "size", size, "crop", crop, "export_profile", "srgb",
                                    "option_string", "fail_on=error", NULL)
            : vips_thumbnail_buffer((void *)data, length, &thumbnail, request->width, "height", request->height,
                                    "size", size, "crop", crop, "option_string", "fail_on=error", NULL);
    } else {
        input = vips_image_new_from_buffer(data, length, "fail_on=error", "access", CVIPS_ACCESS_SEQUENTIAL, NULL);
        if (input == NULL || cvips_watch_target(&watch, input)) {
            status = -1;
        } else {
            status = request->to_srgb
                ? vips_thumbnail_image(input, &thumbnail, request->width, "height", request->height,
                                       "size", size, "crop", crop, "export_profile", "srgb", NULL)
                : vips_thumbnail_image(input, &thumbnail, request->width, "height", request->height,
                                       "size", size, "crop", crop, NULL);
        }
    }
    if (status == 0 && input == NULL && cvips_watch_target(&watch, thumbnail)) status = -1;

    VipsImage *output = thumbnail;
    VipsImage *flattened = NULL;
    if (status == 0 && request->format == CVIPS_JPEG && vips_image_hasalpha(thumbnail)) {
        double white = (int)vips_image_get_format(thumbnail) == (int)CVIPS_FORMAT_USHORT ? 65535.0 : 255.0;
        VipsArrayDouble *background = vips_array_double_new(&white, 1);
        status = vips_flatten(thumbnail, &flattened, "background", background, "max_alpha", white, NULL);
        vips_area_unref((VipsArea *)background);   // a VipsArrayDouble starts with its VipsArea
        output = flattened;
    }
    if (status == 0) {
        result->width = vips_image_get_width(output);
        result->height = vips_image_get_height(output);
        result->has_alpha = vips_image_hasalpha(output) ? 1 : 0;
        // The pixels are decoded, resized and encoded here, a strip at a time: a damaged input
        // fails in the save.
        switch (request->format) {
        case CVIPS_PNG:
            status = vips_pngsave_buffer(output, &result->data, &result->length, "strip", 1, NULL);
            break;
        case CVIPS_WEBP:
            status = vips_webpsave_buffer(output, &result->data, &result->length, "Q", request->quality,
                                          "strip", 1, NULL);
            break;
        default:
            status = vips_jpegsave_buffer(output, &result->data, &result->length, "Q", request->quality,
                                          "strip", 1, "optimize_coding", 1, NULL);
            break;
        }
    }
    // The watch ends before the images it may kill go. A resize that ended after its deadline
    // fails, even when it was not stopped (the watch thread had not run yet): its limit is kept
    // whatever the scheduler did.
    result->timed_out = cvips_watch_stop(&watch);
    if (result->timed_out) status = -1;
    if (flattened != NULL) g_object_unref(flattened);
    if (thumbnail != NULL) g_object_unref(thumbnail);
    if (input != NULL) g_object_unref(input);
    if (status != 0) {
        g_free(result->data);
        result->data = NULL;
        return -1;
    }
    return 0;
}

/// Decodes the encoded image in `data` and reads the value of each of its bands at (`x`, `y`), up to
/// `capacity` of them, for the tests. Returns the number of bands, or -1 with the reason in libvips's
/// error buffer. The corresponding C function is `vips_getpoint`.
static inline int cvips_pixel(const void *data, size_t length, int x, int y, double *values, int capacity) {
    VipsImage *image = vips_image_new_from_buffer(data, length, "", NULL);
    if (image == NULL) return -1;
    double *vector = NULL;
    int count = 0;
    int status = vips_getpoint(image, &vector, &count, x, y, NULL);
    g_object_unref(image);
    if (status != 0) return -1;
    for (int band = 0; band < count && band < capacity; band++) values[band] = vector[band];
    g_free(vector);
    return count;
}

/// Takes libvips's error messages (since the last call), clearing them; NULL when there are none.
/// Free the text with `cvips_free`. The corresponding C function is `vips_error_buffer_copy`.
static inline char *cvips_take_error(void) {
    char *text = vips_error_buffer_copy();
    if (text != NULL && text[0] == '\0') {
        g_free(text);
        return NULL;
    }
    return text;
}

/// Releases memory that libvips allocated (an encoded image, an error's text).
static inline void cvips_free(void *pointer) {
    g_free(pointer);
}

#endif
