/* steer_probe — a program that does what a profiler must survive without the program
 * noticing (test_steering.py, docs/reliability.md "The program never notices"):
 *
 *   errno                 errno as main sees it first, and after a first cudaMalloc
 *   closefds MODE N FILE  after a first allocation, closes its descriptors (MODE closefrom:
 *                         every fd from 3; dup2: /dev/null over 3..1023), writes 15 bytes to
 *                         FILE (which gets a low fd), then N cudaMalloc/cudaFree pairs;
 *                         prints FILE's size
 *   forks T N             T threads allocate and free in a loop while main forks N children
 *                         that make no CUDA call and exit; prints how many died of a signal
 *   loop N US             N cudaMalloc/cudaFree pairs, US microseconds apart; prints "done"
 *
 * Every mode prints only what it would print without the profiler. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cuda_runtime_api.h>

static int errno_at_start = -1;

__attribute__((constructor(65535))) static void first(void) { errno_at_start = errno; }

static int pairs(long n, long us)
{
    for (long i = 0; i < n; i++) {
        void *p = NULL;
        if (cudaMalloc(&p, 256 + (size_t)(i % 7) * 64) != cudaSuccess || cudaFree(p) != cudaSuccess)
            return 1;
        if (us)
            usleep((useconds_t)us);
    }
    return 0;
}

static int mode_errno(void)
{
    printf("errno at start %d\n", errno_at_start);
    void *p = NULL;
    errno = 0;
    cudaError_t r = cudaMalloc(&p, 64);
    printf("cudaMalloc -> %d, errno %d\n", (int)r, errno);
    return 0;
}

static int mode_closefds(const char *how, long n, const char *file)
{
    void *p = NULL;
    if (cudaMalloc(&p, 64) != cudaSuccess)
        return 1;
    if (!strcmp(how, "closefrom")) {
        closefrom(3);
    } else {
        int nul = open("/dev/null", O_RDWR);
        for (int fd = 3; fd < 1024; fd++)
            if (fd != nul)
                dup2(nul, fd);
    }
    int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || write(fd, "fifteen bytes!\n", 15) != 15)
        return 1;
    int rc = pairs(n, 0);
    cudaFree(p);
    struct stat sb;
    fstat(fd, &sb);
    printf("%s: %lld bytes\n", file, (long long)sb.st_size);
    close(fd);
    return rc;
}

static atomic_int stop;

static void *busy(void *arg)
{
    (void)arg;
    while (!atomic_load(&stop))
        pairs(64, 0);
    return NULL;
}

static int mode_forks(int threads, long n)
{
    pthread_t th[64];
    void *p = NULL;
    cudaMalloc(&p, 64); /* the trace is open before the first fork */
    for (int i = 0; i < threads && i < 64; i++)
        pthread_create(&th[i], NULL, busy, NULL);
    long died = 0, bad_status = 0;
    for (long i = 0; i < n; i++) {
        pid_t c = fork();
        if (c == 0)
            exit(0); /* no CUDA call; runs the atexit handlers and destructors */
        int st;
        if (c < 0 || waitpid(c, &st, 0) < 0)
            return 1;
        if (WIFSIGNALED(st) && died++ < 8)
            fprintf(stderr, "child %ld died of signal %d\n", i, WTERMSIG(st));
        else if (WEXITSTATUS(st) != 0)
            bad_status++;
    }
    atomic_store(&stop, 1);
    for (int i = 0; i < threads && i < 64; i++)
        pthread_join(th[i], NULL);
    cudaFree(p);
    printf("forks %ld, died %ld, nonzero %ld\n", n, died, bad_status);
    return 0;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    const char *m = argc > 1 ? argv[1] : "";
    if (!strcmp(m, "errno"))
        return mode_errno();
    if (!strcmp(m, "closefds") && argc == 5)
        return mode_closefds(argv[2], atol(argv[3]), argv[4]);
    if (!strcmp(m, "forks") && argc == 4)
        return mode_forks(atoi(argv[2]), atol(argv[3]));
    if (!strcmp(m, "loop") && argc == 4) {
        int rc = pairs(atol(argv[2]), atol(argv[3]));
        printf("done\n");
        return rc;
    }
    fprintf(stderr, "usage: steer_probe errno | closefds closefrom|dup2 N FILE | forks T N | loop N US\n");
    return 2;
}
