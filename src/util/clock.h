/*
 * clock.h - the monotonic clock, in ns: for waits and pacing, never for
 * trace times (those are the profilers' epoch ns).
 */
#ifndef TELLER_UTIL_CLOCK_H
#define TELLER_UTIL_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline int64_t teller_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

#endif
