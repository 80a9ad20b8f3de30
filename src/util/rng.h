/*
 * rng.h - the project's seeded random numbers: xoshiro256** seeded by
 * splitmix64, uniform, normal and lognormal draws. The simulator and
 * teller perturb draw from it, so that the same seed gives the same case.
 */
#ifndef TELLER_RNG_H
#define TELLER_RNG_H

#include <math.h>
#include <stdint.h>

typedef struct rng { uint64_t s[4]; } rng;

static inline uint64_t splitmix(uint64_t *x)
{
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static inline void rng_seed(rng *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix(&seed);
}

static inline uint64_t rng_next(rng *r)
{
    uint64_t *s = r->s;
    uint64_t res = ((s[1] * 5) << 7 | (s[1] * 5) >> 57) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = (s[3] << 45) | (s[3] >> 19);
    return res;
}

static inline double uni(rng *r) { return (double)(rng_next(r) >> 11) * 0x1.0p-53; }
static inline double uni_in(rng *r, double a, double b) { return a + (b - a) * uni(r); }
static inline int uni_int(rng *r, int n) { return n > 0 ? (int)(uni(r) * n) % n : 0; }

static inline double gauss(rng *r)
{
    double u = uni(r), v = uni(r);
    if (u < 1e-300)
        u = 1e-300;
    return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

/* multiplicative lognormal jitter with median 1 */
static inline double jit(rng *r, double sigma) { return exp(sigma * gauss(r)); }

#endif
