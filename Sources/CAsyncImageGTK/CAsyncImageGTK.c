/* See include/CAsyncImageGTK.h for why this is C. Empty without the trait GTKSupport. */
#ifdef ASYNCIMAGE_GTK
#include "CAsyncImageGTK.h"

#include <fcntl.h>
#include <time.h>
#include <glib-unix.h>
#include <unistd.h>

/* MARK: signals */

gulong aik_connect_list_item(GtkSignalListItemFactory *factory, const char *signal, AikListItemHandler handler,
                             gpointer data) {
    return g_signal_connect(factory, signal, G_CALLBACK(handler), data);
}

gulong aik_connect_object(gpointer instance, const char *signal, AikObjectHandler handler, gpointer data) {
    return g_signal_connect(instance, signal, G_CALLBACK(handler), data);
}

typedef struct {
    AikObjectHandler handler;
    gpointer data;
} AikNotifyBox;

static void aik_notify_trampoline(GObject *object, GParamSpec *pspec, gpointer data) {
    (void)pspec;
    AikNotifyBox *box = data;
    box->handler(object, box->data);
}

static void aik_notify_box_free(gpointer data, GClosure *closure) {
    (void)closure;
    g_free(data);
}

gulong aik_connect_notify(gpointer instance, const char *property, AikObjectHandler handler, gpointer data) {
    AikNotifyBox *box = g_new0(AikNotifyBox, 1);
    box->handler = handler;
    box->data = data;
    char *signal = g_strconcat("notify::", property, NULL);
    gulong id = g_signal_connect_data(instance, signal, G_CALLBACK(aik_notify_trampoline), box, aik_notify_box_free, 0);
    g_free(signal);
    return id;
}

/* MARK: AikCrossFade */

struct _AikCrossFade {
    GObject parent_instance;
    GdkPaintable *from;
    GdkPaintable *to;
    double progress;
    int scale;
    guint64 sets;
};

static void aik_cross_fade_paintable_init(GdkPaintableInterface *iface);

G_DEFINE_TYPE_WITH_CODE(AikCrossFade, aik_cross_fade, G_TYPE_OBJECT,
                        G_IMPLEMENT_INTERFACE(GDK_TYPE_PAINTABLE, aik_cross_fade_paintable_init))

static void aik_cross_fade_dispose(GObject *object) {
    AikCrossFade *self = AIK_CROSS_FADE(object);
    g_clear_object(&self->from);
    g_clear_object(&self->to);
    G_OBJECT_CLASS(aik_cross_fade_parent_class)->dispose(object);
}

static void aik_cross_fade_class_init(AikCrossFadeClass *klass) {
    G_OBJECT_CLASS(klass)->dispose = aik_cross_fade_dispose;
}

static void aik_cross_fade_init(AikCrossFade *self) {
    self->progress = 1.0;
    self->scale = 1;
}

/* The paintable whose size is ours: the new picture, else the old. */
static GdkPaintable *aik_cross_fade_sizing(AikCrossFade *self) {
    return self->to ? self->to : self->from;
}

static void aik_cross_fade_snapshot(GdkPaintable *paintable, GdkSnapshot *snapshot, double width, double height) {
    AikCrossFade *self = AIK_CROSS_FADE(paintable);
    GtkSnapshot *gtk = GTK_SNAPSHOT(snapshot);
    if (self->to && self->progress < 1.0) {
        gtk_snapshot_push_cross_fade(gtk, self->progress < 0.0 ? 0.0 : self->progress);
        if (self->from) gdk_paintable_snapshot(self->from, snapshot, width, height);
        gtk_snapshot_pop(gtk);
        gdk_paintable_snapshot(self->to, snapshot, width, height);
        gtk_snapshot_pop(gtk);
    } else if (self->to) {
        gdk_paintable_snapshot(self->to, snapshot, width, height);
    } else if (self->from) {
        gdk_paintable_snapshot(self->from, snapshot, width, height);
    }
}

static int aik_cross_fade_intrinsic_width(GdkPaintable *paintable) {
    AikCrossFade *self = AIK_CROSS_FADE(paintable);
    GdkPaintable *sizing = aik_cross_fade_sizing(self);
    return sizing ? (gdk_paintable_get_intrinsic_width(sizing) + self->scale - 1) / self->scale : 0;
}

static int aik_cross_fade_intrinsic_height(GdkPaintable *paintable) {
    AikCrossFade *self = AIK_CROSS_FADE(paintable);
    GdkPaintable *sizing = aik_cross_fade_sizing(self);
    return sizing ? (gdk_paintable_get_intrinsic_height(sizing) + self->scale - 1) / self->scale : 0;
}

static double aik_cross_fade_intrinsic_aspect_ratio(GdkPaintable *paintable) {
    GdkPaintable *sizing = aik_cross_fade_sizing(AIK_CROSS_FADE(paintable));
    return sizing ? gdk_paintable_get_intrinsic_aspect_ratio(sizing) : 0.0;
}

static void aik_cross_fade_paintable_init(GdkPaintableInterface *iface) {
    iface->snapshot = aik_cross_fade_snapshot;
    iface->get_intrinsic_width = aik_cross_fade_intrinsic_width;
    iface->get_intrinsic_height = aik_cross_fade_intrinsic_height;
    iface->get_intrinsic_aspect_ratio = aik_cross_fade_intrinsic_aspect_ratio;
}

AikCrossFade *aik_cross_fade_new(void) {
    return g_object_new(AIK_TYPE_CROSS_FADE, NULL);
}

void aik_cross_fade_set(AikCrossFade *self, GdkPaintable *from, GdkPaintable *to, double progress) {
    GdkPaintable *old = aik_cross_fade_sizing(self);
    int oldWidth = old ? gdk_paintable_get_intrinsic_width(old) : -1;
    int oldHeight = old ? gdk_paintable_get_intrinsic_height(old) : -1;
    if (from) g_object_ref(from);
    if (to) g_object_ref(to);
    g_clear_object(&self->from);
    g_clear_object(&self->to);
    self->from = from;
    self->to = to;
    self->progress = progress;
    self->sets += 1;
    GdkPaintable *now = aik_cross_fade_sizing(self);
    int width = now ? gdk_paintable_get_intrinsic_width(now) : -1;
    int height = now ? gdk_paintable_get_intrinsic_height(now) : -1;
    if (width != oldWidth || height != oldHeight) gdk_paintable_invalidate_size(GDK_PAINTABLE(self));
    gdk_paintable_invalidate_contents(GDK_PAINTABLE(self));
}

void aik_cross_fade_set_scale(AikCrossFade *self, int scale) {
    if (scale < 1) scale = 1;
    if (scale == self->scale) return;
    self->scale = scale;
    gdk_paintable_invalidate_size(GDK_PAINTABLE(self));
}

guint64 aik_cross_fade_set_count(AikCrossFade *self) {
    return self->sets;
}

/* MARK: textures */

GdkTexture *aik_texture_new_premultiplied(int width, int height, const void *data, size_t stride, size_t length,
                                          GDestroyNotify release, gpointer owner) {
    GBytes *bytes = g_bytes_new_with_free_func(data, length, release, owner);
    GdkTexture *texture = gdk_memory_texture_new(width, height, GDK_MEMORY_R8G8B8A8_PREMULTIPLIED, bytes, stride);
    g_bytes_unref(bytes);
    return texture;
}

/* MARK: the main queue */

/* libdispatch's SPI for CoreFoundation's run loop (exported by libdispatch.so on
 * Linux): the main queue's eventfd, and the drain. */
extern int _dispatch_get_main_queue_handle_4CF(void);
extern void _dispatch_main_queue_callback_4CF(void *message);

static guint aik_main_queue_source;
static guint64 aik_main_queue_dispatches;
static guint64 aik_main_queue_busy;
static guint64 aik_main_queue_busy_cpu;

/* This thread's CPU time in microseconds: unlike the monotonic clock, it does
 * not count the time the thread was runnable while another thread had its
 * core (on a 2-core machine with a software renderer, much of a frame). */
guint64 aik_thread_cpu_microseconds(void) {
    struct timespec now;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now) != 0) return 0;
    return (guint64)now.tv_sec * 1000000u + (guint64)now.tv_nsec / 1000u;
}

static gboolean aik_main_queue_ready(gint fd, GIOCondition condition, gpointer data) {
    (void)condition;
    (void)data;
    /* The drain does not reset the eventfd: read it first (it is non-blocking),
     * or GLib would find it readable again at once and spin. Work posted during
     * the drain writes it again, so nothing is lost. */
    uint64_t count;
    while (read(fd, &count, sizeof count) > 0) {
    }
    aik_main_queue_dispatches += 1;
    gint64 start = g_get_monotonic_time();
    guint64 cpu = aik_thread_cpu_microseconds();
    _dispatch_main_queue_callback_4CF(NULL);
    aik_main_queue_busy += (guint64)(g_get_monotonic_time() - start);
    aik_main_queue_busy_cpu += aik_thread_cpu_microseconds() - cpu;
    return G_SOURCE_CONTINUE;
}

guint aik_main_queue_attach(void) {
    if (aik_main_queue_source != 0) return aik_main_queue_source;
    int fd = _dispatch_get_main_queue_handle_4CF();
    if (fd < 0) return 0;
    int flags = fcntl(fd, F_GETFL, 0);
    if (flags >= 0 && !(flags & O_NONBLOCK)) fcntl(fd, F_SETFL, flags | O_NONBLOCK);
    aik_main_queue_source = g_unix_fd_add_full(G_PRIORITY_DEFAULT, fd, G_IO_IN, aik_main_queue_ready, NULL, NULL);
    return aik_main_queue_source;
}

guint64 aik_main_queue_dispatch_count(void) {
    return aik_main_queue_dispatches;
}

guint64 aik_main_queue_busy_microseconds(void) {
    return aik_main_queue_busy;
}

guint64 aik_main_queue_busy_cpu_microseconds(void) {
    return aik_main_queue_busy_cpu;
}

/* MARK: rendering */

GdkTexture *aik_render_widget(GtkWidget *widget) {
    int width = gtk_widget_get_width(widget);
    int height = gtk_widget_get_height(widget);
    GtkNative *native = GTK_IS_NATIVE(widget) ? GTK_NATIVE(widget) : gtk_widget_get_native(widget);
    if (width <= 0 || height <= 0 || native == NULL) return NULL;
    GskRenderer *renderer = gtk_native_get_renderer(native);
    if (renderer == NULL) return NULL;
    GdkPaintable *paintable = gtk_widget_paintable_new(widget);
    GtkSnapshot *snapshot = gtk_snapshot_new();
    gdk_paintable_snapshot(paintable, GDK_SNAPSHOT(snapshot), width, height);
    GskRenderNode *node = gtk_snapshot_free_to_node(snapshot);
    g_object_unref(paintable);
    if (node == NULL) return NULL;
    GdkTexture *texture = gsk_renderer_render_texture(renderer, node, &GRAPHENE_RECT_INIT(0, 0, width, height));
    gsk_render_node_unref(node);
    return texture;
}

void aik_texture_download(GdkTexture *texture, uint8_t *data, size_t stride) {
    gdk_texture_download(texture, data, stride);
}

#endif /* ASYNCIMAGE_GTK */
