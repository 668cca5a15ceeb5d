/* libcurl's version, for the machine description. */
#include <curl/curl.h>
