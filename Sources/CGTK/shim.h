#ifndef ASYNCIMAGE_CGTK_SHIM_H
#define ASYNCIMAGE_CGTK_SHIM_H
#if __has_include(<gtk/gtk.h>)
#include <gtk/gtk.h>
#else
#error "GTK 4's headers are missing: apt-get install -y libgtk-4-dev pkg-config (only needed with the trait GTKSupport)"
#endif
#endif
