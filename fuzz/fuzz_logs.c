/*
 * fuzz_logs.c - libFuzzer target for the log reader and the template miner.
 * The input is fed in two pieces (split at its first byte's value) so that
 * lines cut between feeds are exercised; a small record limit makes the
 * truncation path reachable. Fewer than 64 lines are held back for the
 * header learner until finish; the seeds with 8 or more lines sharing a
 * header (fuzz/corpus/logs/) make it learn one.
 */
#include <stddef.h>
#include <stdint.h>

#include "teller/logs.h"

static int on_record(void *ctx, const teller_log_record *rec)
{
    teller_log_miner *m = ctx;
    teller_log_param p[8];
    teller_log_match mt;
    if (teller_log_miner_add(m, rec->key.p, rec->key.n, &mt, p, 8) != TELLER_OK)
        return -TELLER_ERR_NOMEM;
    (void)teller_log_miner_template(m, mt.template_id);
    /* the slots of the template as it is now, as `teller logs --json` reads them */
    uint32_t np;
    teller_log_miner_params(m, mt.template_id, rec->key.p, rec->key.n, p, 8, &np);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    teller_log_opts o = teller_log_defaults();
    o.max_record_bytes = 512;
    o.ref_ns = 1735689600000000000LL;
    teller_log_reader *r = teller_log_reader_create(&o);
    teller_log_miner *m = teller_log_miner_create(NULL);
    if (r && m) {
        size_t cut = size ? data[0] % (size + 1) : 0;
        teller_log_reader_feed(r, data, cut, on_record, m, NULL);
        teller_log_reader_feed(r, data + cut, size - cut, on_record, m, NULL);
        teller_log_reader_finish(r, on_record, m, NULL);
        teller_log_record rec;
        teller_log_parse_line((const char *)data, size, &o, &rec);
        char out[256];
        char tpl[128];
        size_t n = size < sizeof tpl - 1 ? size : sizeof tpl - 1;
        for (size_t i = 0; i < n; i++)
            tpl[i] = data[i] ? (char)data[i] : ' ';
        tpl[n] = 0;
        teller_loghub_normalize(tpl, out, sizeof out);
    }
    teller_log_reader_free(r);
    teller_log_miner_free(m);
    return 0;
}
