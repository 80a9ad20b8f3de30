/*
 * names.c - operator name normalisation (see tree.h). The rules, in order:
 *  1. remove template argument lists <...> (nested), keeping "::" joins;
 *  2. cut at the first '(' that follows a name character (the parameter
 *     list); a name that starts with '(' is kept whole;
 *  3. when a parameter list was cut, keep the last space-separated word
 *     (drops "void " and return types); names without one, like
 *     "Memcpy HtoD (Pinned -> Device)", stay whole;
 *  4. drop a trailing CUDA API version suffix "_v" + digits.
 */
#include <ctype.h>
#include <string.h>

#include "teller/tree.h"

size_t teller_name_normalize(const char *name, char *out, size_t cap)
{
    if (cap == 0)
        return 0;
    char tmp[1024];
    size_t n = 0;
    int depth = 0, paren = 0, cut = 0; /* paren: '(' nesting inside a template list */
    for (const char *p = name; *p && n + 1 < sizeof tmp; p++) {
        if (depth) {
            /* "(8)>(0)" inside a template argument is not its end */
            if (*p == '(')
                paren++;
            else if (*p == ')' && paren > 0)
                paren--;
            else if (*p == '<' && !paren)
                depth++;
            else if (*p == '>' && !paren)
                depth--;
            continue;
        }
        if (*p == '<') {
            depth = 1;
            paren = 0;
            continue;
        }
        if (*p == '(' && n > 0 && (isalnum((unsigned char)tmp[n - 1]) || tmp[n - 1] == '_' || tmp[n - 1] == ':')) {
            cut = 1;
            break;
        }
        tmp[n++] = *p;
    }
    while (n > 0 && tmp[n - 1] == ' ')
        n--;
    tmp[n] = 0;
    const char *w = cut ? strrchr(tmp, ' ') : NULL;
    w = w ? w + 1 : tmp;
    size_t len = strlen(w);
    /* _vNNNN */
    size_t d = len;
    while (d > 0 && isdigit((unsigned char)w[d - 1]))
        d--;
    if (d < len && d >= 2 && w[d - 1] == 'v' && w[d - 2] == '_')
        len = d - 2;
    if (len >= cap)
        len = cap - 1;
    memcpy(out, w, len);
    out[len] = 0;
    return len;
}

size_t teller_name_mask_digits(char *s)
{
    size_t w = 0;
    for (size_t r = 0; s[r]; r++) {
        if (!isdigit((unsigned char)s[r]))
            s[w++] = s[r];
        else if (r == 0 || !isdigit((unsigned char)s[r - 1]))
            s[w++] = '#';
    }
    s[w] = 0;
    return w;
}
