/*
 * What Swift cannot import from GTK 4 and GLib, for AsyncImageGTK (trait
 * GTKSupport), and why each piece is C:
 *
 * - Casts: GTK_WIDGET(), GDK_PAINTABLE() and the like are function-like
 *   macros; Swift imports none of them.
 * - Signals: g_signal_connect() and G_CALLBACK() are macros, and a signal's
 *   handler type depends on the signal; the typed connect functions below
 *   take a Swift `@convention(c)` function of the right shape.
 * - AikCrossFade: a GdkPaintable that draws one paintable cross-faded into
 *   another with gtk_snapshot_push_cross_fade. Implementing a GObject
 *   interface (G_DEFINE_TYPE_WITH_CODE, G_IMPLEMENT_INTERFACE) is macros all
 *   the way down.
 * - The main queue's GLib source: libdispatch's main queue signals an eventfd
 *   when it has work (the SPI CoreFoundation's run loop uses); a GLib source
 *   on that descriptor drains it from GTK's main loop, so DispatchQueue.main
 *   (the loader's default delivery queue) and the main actor run there.
 * - Rendering a widget to pixels for tests (GRAPHENE_RECT_INIT is a macro).
 *
 * Everything here is compiled only with the trait (ASYNCIMAGE_GTK, set by the
 * package only then, or GTK's headers on the include path, which only the
 * trait's pkg-config flags put there); without it the target is empty and
 * needs no GTK headers.
 */
#ifndef CASYNCIMAGEGTK_H
#define CASYNCIMAGEGTK_H

#if defined(ASYNCIMAGE_GTK) || __has_include(<gtk/gtk.h>)
#include <gtk/gtk.h>
#include <stdint.h>

/* MARK: casts */
static inline GtkWidget *aik_widget(gpointer object) { return GTK_WIDGET(object); }
static inline GObject *aik_object(gpointer object) { return G_OBJECT(object); }
static inline GtkPicture *aik_picture(gpointer object) { return GTK_PICTURE(object); }
static inline GtkWindow *aik_window(gpointer object) { return GTK_WINDOW(object); }
static inline GtkListItem *aik_list_item(gpointer object) { return GTK_LIST_ITEM(object); }
static inline GdkPaintable *aik_paintable(gpointer object) { return GDK_PAINTABLE(object); }
static inline GListModel *aik_list_model(gpointer object) { return G_LIST_MODEL(object); }
static inline GtkSelectionModel *aik_selection_model(gpointer object) { return GTK_SELECTION_MODEL(object); }
static inline GtkListItemFactory *aik_list_item_factory(gpointer object) { return GTK_LIST_ITEM_FACTORY(object); }
static inline GtkScrolledWindow *aik_scrolled_window(gpointer object) { return GTK_SCROLLED_WINDOW(object); }
static inline GtkOverlay *aik_overlay(gpointer object) { return GTK_OVERLAY(object); }
static inline GtkLabel *aik_label(gpointer object) { return GTK_LABEL(object); }
static inline GtkGridView *aik_grid_view(gpointer object) { return GTK_GRID_VIEW(object); }
static inline GApplication *aik_application(gpointer object) { return G_APPLICATION(object); }
static inline GtkApplication *aik_gtk_application(gpointer object) { return GTK_APPLICATION(object); }

/* MARK: signals (g_signal_connect and G_CALLBACK are macros) */

/* A GtkSignalListItemFactory's setup, bind, unbind and teardown. */
typedef void (*AikListItemHandler)(GtkSignalListItemFactory *factory, GObject *item, gpointer data);
gulong aik_connect_list_item(GtkSignalListItemFactory *factory, const char *signal, AikListItemHandler handler,
                             gpointer data);

/* A signal of shape void (*)(GObject *, gpointer): "notify::scale-factor", "destroy", "close-request"'s
 * boolean-less cousins, a GtkAdjustment's "value-changed". */
typedef void (*AikObjectHandler)(GObject *object, gpointer data);
gulong aik_connect_object(gpointer instance, const char *signal, AikObjectHandler handler, gpointer data);

/* "notify::..." handlers receive the GParamSpec too; this adapts to AikObjectHandler. */
gulong aik_connect_notify(gpointer instance, const char *property, AikObjectHandler handler, gpointer data);

/* MARK: the cross-fading paintable */

#define AIK_TYPE_CROSS_FADE (aik_cross_fade_get_type())
G_DECLARE_FINAL_TYPE(AikCrossFade, aik_cross_fade, AIK, CROSS_FADE, GObject)

/* An empty paintable (draws nothing, no intrinsic size). */
AikCrossFade *aik_cross_fade_new(void);
/* Shows `to` (its intrinsic size is the paintable's), drawn over `from` with
 * gtk_snapshot_push_cross_fade at `progress` (0: all `from`, 1: all `to`;
 * `from` NULL: `to` fades in from transparent). Either may be NULL. Invalidates
 * the contents, and the size when `to`'s size changed. References are taken. */
void aik_cross_fade_set(AikCrossFade *self, GdkPaintable *from, GdkPaintable *to, double progress);
/* The widget's scale factor: the intrinsic size is the pictures' pixel size
 * divided by it (a picture decoded at 2x lays out at its logical size). */
void aik_cross_fade_set_scale(AikCrossFade *self, int scale);
/* How many times aik_cross_fade_set was called (tests and benchmarks). */
guint64 aik_cross_fade_set_count(AikCrossFade *self);

/* MARK: textures over a Swift image's own bytes */

/* A GdkMemoryTexture in GDK_MEMORY_R8G8B8A8_PREMULTIPLIED over `data` (not copied):
 * `release(owner)` runs when GDK drops the bytes (on any thread). */
GdkTexture *aik_texture_new_premultiplied(int width, int height, const void *data, size_t stride, size_t length,
                                          GDestroyNotify release, gpointer owner);

/* MARK: the dispatch main queue on GLib's main context */

/* Attaches, once per process, a GLib source on the default main context that
 * drains libdispatch's main queue; later calls return the same id. Call on the
 * process's main thread (the one libdispatch calls main), which must be the one
 * iterating the default context (gtk_application_run or g_main_context_iteration). */
guint aik_main_queue_attach(void);
/* How many times the source ran (a diagnostic: about one per burst of work, never a spin). */
guint64 aik_main_queue_dispatch_count(void);
/* Microseconds spent draining it on the main loop so far (the deliveries: actions, notifications). */
guint64 aik_main_queue_busy_microseconds(void);
/* The same in the main thread's CPU time (without the time it was runnable but preempted). */
guint64 aik_main_queue_busy_cpu_microseconds(void);
/* The calling thread's CPU time so far, microseconds (CLOCK_THREAD_CPUTIME_ID). */
guint64 aik_thread_cpu_microseconds(void);

/* MARK: rendering for tests */

/* Renders `widget` (realized, in a window) with its window's renderer
 * (gtk_widget_paintable_new, gdk_paintable_snapshot, gtk_snapshot_free_to_node,
 * gsk_renderer_render_texture). NULL when it has no size or no renderer. */
GdkTexture *aik_render_widget(GtkWidget *widget);
/* gdk_texture_download: B8G8R8A8 premultiplied on little-endian (Cairo's ARGB32) into `data`. */
void aik_texture_download(GdkTexture *texture, uint8_t *data, size_t stride);

#endif /* ASYNCIMAGE_GTK or GTK's headers */
#endif /* CASYNCIMAGEGTK_H */
