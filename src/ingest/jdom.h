/*
 * jdom.h - a small JSON document model for small files (truth, predictions,
 * vocabularies), built on the streaming tokenizer in json.h. Traces are
 * never read this way: they are streamed by the readers.
 */
#ifndef TELLER_JDOM_H
#define TELLER_JDOM_H

#include <stddef.h>
#include <stdint.h>

#include "teller/error.h"

typedef enum jtype { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ } jtype;

typedef struct jv jv;
struct jv {
    jtype  type;
    int    b;
    double num;
    char  *str;     /* J_STR: NUL-terminated, unescaped */
    jv    *items;   /* J_ARR, J_OBJ: values */
    char **keys;    /* J_OBJ: keys, parallel to items */
    size_t n;
    uint64_t offset; /* byte offset of the value in the file */
};

/* Parses the whole file (at most 256 MiB). NULL on error, with err set to
 * the file and byte offset. */
jv *jdom_load(const char *path, teller_error *err);
/* Parses a buffer; name is used in errors. */
jv *jdom_parse(const char *name, const char *data, size_t len, teller_error *err);
void jdom_free(jv *v);

/* Member of an object, or NULL. */
const jv *jdom_get(const jv *obj, const char *key);
/* Typed look-ups with a default when absent or of another type. */
double      jdom_num(const jv *obj, const char *key, double def);
const char *jdom_str(const jv *obj, const char *key, const char *def);
int         jdom_bool(const jv *obj, const char *key, int def);

#endif
