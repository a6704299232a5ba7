#!/usr/bin/env python3
"""Score a detlint run against the judged labels and the expected findings.

usage: score.py OUTDIR [--labels labels.jsonl] [--expected expected.jsonl] [--redraw]
                       [--write-found] [--markdown]

Precision: the sample is every finding of the 11 smaller repositories plus, for cookbook and
tfdocs, the findings already judged (kept from the base draw) topped up to 65/80 by a seeded
random.Random(13) draw of the others (--redraw: a fresh seeded draw). Findings of the sample that
no label covers are listed as UNJUDGED (judge them, add them to judgements.txt, rebuild labels).
Labels whose finding disappeared simply drop out.
Strict: TP only when the problem is real AND the advice fits the code's real version.
Lenient: "wrong version advice" FPs counted as TP (the README's own criterion).
Recall: an expected finding is found when the run reports the same code in one of the
program's files (any line).
"""
import argparse, collections, json, os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from evallib import ROOT, DRAWN, load_findings, load_labels, sample, key

ap = argparse.ArgumentParser()
ap.add_argument('outdir')
ap.add_argument('--labels', default=os.path.join(os.path.dirname(os.path.abspath(__file__)), 'labels.jsonl'))
ap.add_argument('--expected', default=os.path.join(os.path.dirname(os.path.abspath(__file__)), 'expected.jsonl'))
ap.add_argument('--redraw', action='store_true')
ap.add_argument('--write-found', action='store_true', help='rewrite expected.jsonl "found" from this run')
ap.add_argument('--markdown', action='store_true', help='print tables as markdown')
a = ap.parse_args()
outdir = a.outdir if os.path.isabs(a.outdir) else os.path.join(ROOT, a.outdir)

F = load_findings(outdir)
L = load_labels(a.labels)
S = sample(F, L, redraw=a.redraw)
WV = 'wrong version advice'

# assign labels to sample findings (several findings may share a key: use labels in order)
used = collections.Counter()
judged, unjudged = [], []
for d in S:
    k = key(d)
    labs = L.get(k, [])
    if used[k] < len(labs):
        judged.append((d, labs[used[k]])); used[k] += 1
    elif labs:
        judged.append((d, labs[-1]))
    else:
        unjudged.append(d)

pop = collections.Counter(d['repo'] for d in F)
samp = collections.Counter(d['repo'] for d, _ in judged)

def weight(repo):
    return pop[repo] / samp[repo] if repo in DRAWN and samp[repo] else 1.0

per = collections.defaultdict(lambda: collections.Counter())
for d, l in judged:
    c = per[d['code']]
    c['n'] += 1
    if l['verdict'] == 'TP':
        c['tp'] += 1; c['ltp'] += 1
    else:
        c['fp'] += 1
        if l.get('category') == WV:
            c['ltp'] += 1
    w = weight(d['repo'])
    c['w'] += w
    c['wtp'] += w if l['verdict'] == 'TP' else 0
    c['wltp'] += w if (l['verdict'] == 'TP' or l.get('category') == WV) else 0

# recall
E = [json.loads(x) for x in open(a.expected, encoding='utf-8') if x.strip()]
have = collections.defaultdict(set)
for d in F:
    have[(d['repo'], d['code'])].add(d['path'])
for e in E:
    e['found_now'] = any(p in have[(e['repo'], e['code'])] for p in e['files'])
rec = collections.defaultdict(lambda: collections.Counter())
for e in E:
    rec[e['code']]['exp'] += 1
    rec[e['code']]['found'] += e['found_now']

def pct(a_, b_):
    return f"{100.0 * a_ / b_:.1f}%" if b_ else "-"

codes = sorted(set(per) | set(rec))
sep = ' | ' if a.markdown else '  '
hdr = ['rule', 'judged', 'TP', 'FP', 'FP(wrong version)', 'precision', 'lenient prec.', 'expected', 'found', 'recall']
rows = []
tot = collections.Counter(); rtot = collections.Counter()
fpwv = collections.Counter()
for d, l in judged:
    if l['verdict'] == 'FP' and l.get('category') == WV:
        fpwv[d['code']] += 1
for c in codes:
    p, r = per[c], rec[c]
    rows.append([c, p['n'], p['tp'], p['fp'], fpwv[c], pct(p['tp'], p['n']), pct(p['ltp'], p['n']),
                 r['exp'], r['found'], pct(r['found'], r['exp'])])
    tot.update(p); rtot.update(r)
rows.append(['all', tot['n'], tot['tp'], tot['fp'], sum(fpwv.values()), pct(tot['tp'], tot['n']),
             pct(tot['ltp'], tot['n']), rtot['exp'], rtot['found'], pct(rtot['found'], rtot['exp'])])
print(f"run: {outdir}   findings: {len(F)}   sample: {len(S)} (judged {len(judged)}, unjudged {len(unjudged)})")
print('findings per repo:', dict(pop))
if a.markdown:
    print('| ' + ' | '.join(hdr) + ' |'); print('|' + '---|' * len(hdr))
    for r in rows: print('| ' + ' | '.join(str(x) for x in r) + ' |')
else:
    w = [max(len(str(x)) for x in col) for col in zip(hdr, *rows)]
    for r in [hdr] + rows: print(sep.join(str(x).ljust(n) for x, n in zip(r, w)))
print(f"\nsample precision, strict: {pct(tot['tp'], tot['n'])} ({tot['tp']}/{tot['n']});"
      f" lenient (wrong-version advice counted true): {pct(tot['ltp'], tot['n'])} ({tot['ltp']}/{tot['n']})")
print(f"population-weighted precision estimate (cookbook/tfdocs findings weighted by population/sample): "
      f"strict {pct(tot['wtp'], tot['w'])}, lenient {pct(tot['wltp'], tot['w'])} over {len(F)} findings")
print(f"recall: {pct(rtot['found'], rtot['exp'])} ({rtot['found']}/{rtot['exp']}) over "
      f"{len(set((e['repo'], e['program']) for e in E))} programs")

# per repo
print('\nper repo (judged sample):')
pr = collections.defaultdict(collections.Counter)
for d, l in judged:
    pr[d['repo']]['n'] += 1; pr[d['repo']]['tp'] += l['verdict'] == 'TP'
    pr[d['repo']]['ltp'] += l['verdict'] == 'TP' or l.get('category') == WV
for rp in sorted(pr):
    print(f"  {rp}: {pr[rp]['tp']}/{pr[rp]['n']} strict {pct(pr[rp]['tp'], pr[rp]['n'])}, lenient {pct(pr[rp]['ltp'], pr[rp]['n'])}")

cats = collections.Counter(l['category'] for d, l in judged if l['verdict'] == 'FP')
print('\nFP categories:')
for c, n in cats.most_common():
    print(f"  {n:4d}  {c}")

print('\nmisses (expected, not found):')
for e in E:
    if not e['found_now']:
        print(f"  {e['repo']}:{e['program']} {e['code']}: {e['what']}")

if unjudged:
    print(f'\nUNJUDGED findings of the sample ({len(unjudged)}):')
    for d in unjudged:
        cell = f" cell {d['cell']}" if d['cell'] is not None else ''
        print(f"  {d['repo']}|{d['path']}|{d['cell'] if d['cell'] is not None else '-'}|{d['line']}|{d['code']}|  {d['message'][:160]}")
gone = [k for k in L if not any(key(d) == k for d in F)]
if gone:
    print(f'\n{len(gone)} labelled findings are not in this run (dropped from the sample).')

if a.write_found:
    with open(a.expected, 'w', encoding='utf-8') as f:
        for e in E:
            e['found'] = e.pop('found_now')
            f.write(json.dumps(e, ensure_ascii=False) + '\n')
