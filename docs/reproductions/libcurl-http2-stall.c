/*
 * libcurl 7.88 (Debian 12) alone, no Swift: concurrent HTTP/2 transfers over
 * one connection, driven the way AsyncImageKit's transport drives libcurl
 * (curl_multi_perform, curl_multi_info_read, curl_multi_poll; PIPEWAIT;
 * transfers added a few at a time while others run). Each round starts a
 * fresh nghttpd on 127.0.0.1 (ports from $BASE, default 21000, below the
 * ephemeral range),
 * runs 8 transfers of 40-103 KB, and stops it. It counts rounds that took
 * longer than half a second and rounds in which a transfer failed (a stream
 * that stalls for good ends in its 10 s timeout), and prints every 500th.
 *
 *   cc -O1 -o h2-stall libcurl-http2-stall.c -lcurl
 *   ./h2-stall ROUNDS POLL_MS [kick]   # from a folder holding key.pem, cert.pem
 *                                      # (a certificate for IP 127.0.0.1) and docs/0.bin..7.bin
 *
 * POLL_MS caps each curl_multi_poll while transfers run; `kick` pauses and
 * resumes (curl_easy_pause) every HTTP/2 transfer that has had response
 * bytes and then none for 250 ms, as the transport's HTTP2WakeUps does.
 * See RELIABILITY.md for the figures.
 */
#include <arpa/inet.h>
#include <curl/curl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { TRANSFERS = 8 };

struct transfer { CURL *easy; size_t bytes; size_t seen; int done; };

static size_t sink(char *data, size_t size, size_t count, void *user) {
    (void)data;
    ((struct transfer *)user)->bytes += size * count;
    return size * count;
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static int listening(int port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(0x7f000001)};
    int ok = connect(fd, (struct sockaddr *)&address, sizeof address) == 0;
    close(fd);
    return ok;
}

/* Starts nghttpd on a free port from `*port` on; returns its pid. */
static pid_t start_server(int *port) {
    for (;; (*port)++) {
        if (listening(*port)) continue;
        char text[16];
        snprintf(text, sizeof text, "%d", *port);
        pid_t pid = fork();
        if (pid == 0) {
            freopen("/dev/null", "w", stdout);
            freopen("/dev/null", "w", stderr);
            execlp("nghttpd", "nghttpd", "--address=127.0.0.1", "--htdocs=docs", text, "key.pem", "cert.pem", (char *)NULL);
            _exit(127);
        }
        while (!listening(*port)) {
            usleep(2000);
            if (waitpid(pid, NULL, WNOHANG) == pid) break; /* port taken: next one */
        }
        if (listening(*port)) return pid;
    }
}

int main(int argc, char **argv) {
    if (argc < 3) return 2;
    int rounds = atoi(argv[1]), poll_ms = atoi(argv[2]), kick = argc > 3;
    int slow = 0, failed = 0, base = getenv("BASE") ? atoi(getenv("BASE")) : 21000;
    curl_global_init(CURL_GLOBAL_ALL);
    CURLM *multi = curl_multi_init();
    srand(1);
    for (int round = 0; round < rounds; round++) {
        int port = base + round % 4000;
        pid_t server = start_server(&port);
        struct transfer t[TRANSFERS] = {0};
        for (int i = 0; i < TRANSFERS; i++) {
            char url[64];
            snprintf(url, sizeof url, "https://127.0.0.1:%d/%d.bin", port, i);
            t[i].easy = curl_easy_init();
            curl_easy_setopt(t[i].easy, CURLOPT_URL, url);
            curl_easy_setopt(t[i].easy, CURLOPT_NOSIGNAL, 1L);
            curl_easy_setopt(t[i].easy, CURLOPT_CAINFO, "cert.pem");
            curl_easy_setopt(t[i].easy, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
            curl_easy_setopt(t[i].easy, CURLOPT_PIPEWAIT, 1L);
            curl_easy_setopt(t[i].easy, CURLOPT_TIMEOUT_MS, 10000L);
            curl_easy_setopt(t[i].easy, CURLOPT_WRITEFUNCTION, sink);
            curl_easy_setopt(t[i].easy, CURLOPT_WRITEDATA, &t[i]);
            curl_easy_setopt(t[i].easy, CURLOPT_PRIVATE, &t[i]);
        }
        double start = now(), last_kick = start;
        int added = 0, left = TRANSFERS, failures = 0;
        for (;;) {
            for (int k = rand() % 4; k > 0 && added < TRANSFERS; k--) curl_multi_add_handle(multi, t[added++].easy);
            if (rand() % 2) usleep(rand() % 3000);
            int running, queued;
            curl_multi_perform(multi, &running);
            CURLMsg *message;
            while ((message = curl_multi_info_read(multi, &queued))) {
                if (message->msg != CURLMSG_DONE) continue;
                struct transfer *done;
                curl_easy_getinfo(message->easy_handle, CURLINFO_PRIVATE, (char **)&done);
                done->done = 1;
                if (message->data.result != CURLE_OK) {
                    failures++;
                    fprintf(stderr, "round %d: %s after %.1f s with %zu bytes\n", round,
                            curl_easy_strerror(message->data.result), now() - start, done->bytes);
                }
                curl_multi_remove_handle(multi, message->easy_handle);
                left--;
            }
            if (!left) break;
            if (kick && now() - last_kick >= 0.25) {
                last_kick = now();
                for (int i = 0; i < added; i++) {
                    long version = 0;
                    curl_easy_getinfo(t[i].easy, CURLINFO_HTTP_VERSION, &version);
                    if (!t[i].done && t[i].bytes > 0 && t[i].bytes == t[i].seen && version == CURL_HTTP_VERSION_2_0) {
                        curl_easy_pause(t[i].easy, CURLPAUSE_RECV);
                        curl_easy_pause(t[i].easy, CURLPAUSE_CONT);
                    }
                    t[i].seen = t[i].bytes;
                }
            }
            int ready;
            curl_multi_poll(multi, NULL, 0, added < TRANSFERS ? 1 : poll_ms, &ready);
        }
        double took = now() - start;
        for (int i = 0; i < TRANSFERS; i++) curl_easy_cleanup(t[i].easy);
        kill(server, SIGTERM);
        waitpid(server, NULL, 0);
        slow += took > 0.5;
        failed += failures > 0;
        if (round % 500 == 499 || round == rounds - 1) {
            printf("%d rounds: %d over 0.5 s, %d with a failed transfer\n", round + 1, slow, failed);
            fflush(stdout);
        }
    }
    return failed ? 1 : 0;
}
