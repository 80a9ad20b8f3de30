/*
 * test_json.c - the streaming tokenizer: values, escapes, numbers, and
 * JSON_MORE at every possible cut of the input.
 */
#include <string.h>

#include "check.h"
#include "ingest/json.h"

static json_cur cur(const char *s) { return (json_cur){s, s + strlen(s), NULL}; }

static void test_strings_and_escapes(void)
{
    json_cur c = cur("\"a\\\"b\\\\\\u00e9\\ud83d\\ude00\\n\" ");
    json_str s;
    CHECK_EQ_INT(json_string(&c, &s), JSON_OK);
    CHECK(s.escaped);
    char out[64];
    long n = json_unescape(&s, out, sizeof out);
    CHECK_EQ_INT(n, 11);
    CHECK(memcmp(out, "a\"b\\\xc3\xa9\xf0\x9f\x98\x80\n", 11) == 0);
    json_cur c2 = cur("\"plain\"");
    CHECK_EQ_INT(json_string(&c2, &s), JSON_OK);
    CHECK(!s.escaped && s.len == 5);
    json_str bad = {"\\q", 2, 1};
    CHECK_EQ_INT(json_unescape(&bad, out, sizeof out), -1);
    json_str lone = {"\\ud800x", 7, 1};
    CHECK_EQ_INT(json_unescape(&lone, out, sizeof out), 4); /* U+FFFD + x */
}

static void test_numbers_exact_ns(void)
{
    int64_t v;
    json_cur c = cur("1365627862757.064,");
    CHECK_EQ_INT(json_milli(&c, &v), JSON_OK);
    CHECK_EQ_INT(v, 1365627862757064LL);
    c = cur("1712195495505543.25,");
    CHECK_EQ_INT(json_milli(&c, &v), JSON_OK);
    CHECK_EQ_INT(v, 1712195495505543250LL);
    c = cur("4.9285,");
    CHECK_EQ_INT(json_milli(&c, &v), JSON_OK);
    CHECK_EQ_INT(v, 4929);
    c = cur("-2.5e3,");
    CHECK_EQ_INT(json_milli(&c, &v), JSON_OK);
    CHECK_EQ_INT(v, -2500000);
    c = cur("1694128201426556}");
    CHECK_EQ_INT(json_int(&c, &v), JSON_OK);
    CHECK_EQ_INT(v, 1694128201426556LL);
    c = cur("-x");
    CHECK_EQ_INT(json_int(&c, &v), JSON_ERR);
}

static void test_skip_nested(void)
{
    const char *doc = "{\"a\": [1, {\"b\": \"]}\\\"\"}, null, true], \"c\": false} ,";
    json_cur c = cur(doc);
    CHECK_EQ_INT(json_skip(&c), JSON_OK);
    CHECK(*c.p == ' ');
    json_cur bad = cur("{\"a\": [1}");
    CHECK_EQ_INT(json_skip(&bad), JSON_ERR);
}

static void test_more_at_every_cut(void)
{
    /* a complete value parses; every proper prefix asks for more */
    const char *doc = "{\"k\": [1.5, \"x\\\"y\", {\"z\": null}], \"t\": true}";
    size_t n = strlen(doc);
    for (size_t cut = 1; cut < n; cut++) {
        json_cur c = {doc, doc + cut, NULL};
        int r = json_skip(&c);
        CHECK(r == JSON_MORE);
    }
    json_cur c = {doc, doc + n, NULL};
    CHECK_EQ_INT(json_skip(&c), JSON_OK);
}

const test_case json_tests[] = {
    {"json: strings and escapes", test_strings_and_escapes},
    {"json: timestamps parse to exact nanoseconds", test_numbers_exact_ns},
    {"json: skip nested values with tricky strings", test_skip_nested},
    {"json: every cut of a value asks for more input", test_more_at_every_cut},
    {NULL, NULL},
};
