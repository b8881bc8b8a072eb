// The system libcurl (Debian: libcurl4-openssl-dev to build; libcurl4 is already there, since
// FoundationNetworking links it), seen from Swift through small static inline wrappers:
// `curl_easy_setopt` and `curl_easy_getinfo` are variadic, which Swift cannot call. Only Haneke's
// Internal/CurlTransfer.swift imports this module.

#ifndef HANEKE_CCURL_SHIM_H
#define HANEKE_CCURL_SHIM_H

#include <curl/curl.h>

static inline CURLcode ccurl_setopt_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode ccurl_setopt_string(CURL *handle, CURLoption option, const char *value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode ccurl_setopt_pointer(CURL *handle, CURLoption option, void *value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode ccurl_setopt_slist(CURL *handle, CURLoption option, struct curl_slist *value) {
    return curl_easy_setopt(handle, option, value);
}

typedef size_t (*ccurl_data_callback)(char *data, size_t size, size_t count, void *context);
typedef int (*ccurl_progress_callback)(void *context, curl_off_t downloadTotal, curl_off_t downloaded,
                                       curl_off_t uploadTotal, curl_off_t uploaded);

static inline CURLcode ccurl_setopt_data_callback(CURL *handle, CURLoption option, ccurl_data_callback callback) {
    return curl_easy_setopt(handle, option, callback);
}

static inline CURLcode ccurl_setopt_progress_callback(CURL *handle, ccurl_progress_callback callback) {
    return curl_easy_setopt(handle, CURLOPT_XFERINFOFUNCTION, callback);
}

static inline CURLcode ccurl_getinfo_long(CURL *handle, CURLINFO info, long *value) {
    return curl_easy_getinfo(handle, info, value);
}

static inline CURLcode ccurl_getinfo_string(CURL *handle, CURLINFO info, const char **value) {
    return curl_easy_getinfo(handle, info, value);
}

/// What the write callback returns to stop the transfer: anything but the size it was given.
static inline size_t ccurl_write_abort(void) { return 0; }

#endif
