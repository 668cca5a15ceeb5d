/*
 * Typed wrappers for libcurl's variadic functions, which Swift cannot call.
 * Nothing here holds logic: each wrapper forwards one argument of one type.
 */
#ifndef AIV_CCURL_SHIM_H
#define AIV_CCURL_SHIM_H

#include <curl/curl.h>
#include <dlfcn.h>
#include <string.h>

typedef size_t (*aiv_curl_write_callback)(char *ptr, size_t size, size_t nmemb, void *userdata);

static inline CURLcode aiv_curl_easy_setopt_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode aiv_curl_easy_setopt_string(CURL *handle, CURLoption option, const char *value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode aiv_curl_easy_setopt_pointer(CURL *handle, CURLoption option, void *value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode aiv_curl_easy_setopt_off_t(CURL *handle, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode aiv_curl_easy_setopt_write_function(CURL *handle, aiv_curl_write_callback callback) {
    return curl_easy_setopt(handle, CURLOPT_WRITEFUNCTION, callback);
}

static inline CURLcode aiv_curl_easy_setopt_header_function(CURL *handle, aiv_curl_write_callback callback) {
    return curl_easy_setopt(handle, CURLOPT_HEADERFUNCTION, callback);
}

static inline CURLcode aiv_curl_easy_setopt_opensocket_function(CURL *handle, curl_opensocket_callback callback) {
    return curl_easy_setopt(handle, CURLOPT_OPENSOCKETFUNCTION, callback);
}

static inline CURLcode aiv_curl_easy_setopt_prereq_function(CURL *handle, curl_prereq_callback callback) {
    return curl_easy_setopt(handle, CURLOPT_PREREQFUNCTION, callback);
}

/* The socket address inside a curl_sockaddr (room for IPv6 follows it). */
static inline const struct sockaddr *aiv_curl_sockaddr_address(const struct curl_sockaddr *address) {
    return &address->addr;
}

static inline CURLcode aiv_curl_easy_getinfo_long(CURL *handle, CURLINFO info, long *value) {
    return curl_easy_getinfo(handle, info, value);
}

static inline CURLcode aiv_curl_easy_getinfo_off_t(CURL *handle, CURLINFO info, curl_off_t *value) {
    return curl_easy_getinfo(handle, info, value);
}

static inline CURLcode aiv_curl_easy_getinfo_string(CURL *handle, CURLINFO info, char **value) {
    return curl_easy_getinfo(handle, info, value);
}

static inline CURLcode aiv_curl_easy_getinfo_pointer(CURL *handle, CURLINFO info, void **value) {
    return curl_easy_getinfo(handle, info, value);
}

static inline CURLMcode aiv_curl_multi_setopt_long(CURLM *multi, CURLMoption option, long value) {
    return curl_multi_setopt(multi, option, value);
}

static inline CURLSHcode aiv_curl_share_setopt_long(CURLSH *share, CURLSHoption option, long value) {
    return curl_share_setopt(share, option, value);
}

/* CURLMsg.data is a union; Swift reads it awkwardly, so read it here. */
static inline CURLcode aiv_curl_msg_result(const CURLMsg *msg) {
    return msg->data.result;
}

/* CURLVERSION_NOW is a macro naming another constant, which Swift does not import. */
static inline const curl_version_info_data *aiv_curl_version_info_now(void) {
    return curl_version_info(CURLVERSION_NOW);
}

/*
 * Whether TLS negotiated HTTP/2 ("h2" by ALPN) on the connection of a
 * transfer about to send its request: 1 yes, 0 no (another protocol or
 * none), -1 unknown (not TLS, not OpenSSL). libcurl 7.88 tells the HTTP
 * version only once a response has arrived; the transport needs to know
 * when the connection is ready. libcurl's TLS library here is OpenSSL,
 * whose function is looked up at run time in the libssl that libcurl
 * loaded: nothing links OpenSSL, or needs its headers, to build.
 */
typedef void (*aiv_alpn_selected_fn)(const void *ssl, const unsigned char **data, unsigned int *len);

static inline int aiv_curl_alpn_is_h2(CURL *handle) {
    struct curl_tlssessioninfo *info = NULL;
    if (curl_easy_getinfo(handle, CURLINFO_TLS_SSL_PTR, &info) != CURLE_OK || info == NULL
        || info->backend != CURLSSLBACKEND_OPENSSL || info->internals == NULL) {
        return -1;
    }
    /* Looked up for each new connection (microseconds beside its TLS handshake):
       no state shared between loop threads. */
    aiv_alpn_selected_fn selected = (aiv_alpn_selected_fn)dlsym((void *)0 /* RTLD_DEFAULT */, "SSL_get0_alpn_selected");
    if (selected == NULL) return -1;
    const unsigned char *protocol = NULL;
    unsigned int length = 0;
    selected(info->internals, &protocol, &length);
    return (length == 2 && protocol != NULL && memcmp(protocol, "h2", 2) == 0) ? 1 : 0;
}

#endif
