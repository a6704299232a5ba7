"""Figures of the rerun after the fixes (not blind): first-run verdicts carried over by (file, line, code),
manual verdicts (not blind) for findings the first run did not have. python score_rerun.py"""
import json, sys
from pathlib import Path
base = Path(__file__).resolve().parent.parent; rerun = base/'rerun'
names = "resnet3d classif transformer pix2pixhd nerftorch nerftf isr nerfies flaxmodels ntk".split()
manual = {  # verdicts for findings the first run did not have, or whose message changed (not blind)
 ('resnet3d','main.py',169,'DET608'): 'FP',
 ('classif','cifar.py',94,'DET106'): 'TP', ('classif','cifar.py',95,'DET611'): 'TP', ('classif','cifar.py',97,'DET611'): 'FP',
 ('classif','cifar.py',140,'DET602'): 'TP', ('classif','cifar.py',172,'DET604'): 'TP',
 ('classif','imagenet.py',103,'DET106'): 'TP', ('classif','imagenet.py',104,'DET611'): 'TP',
 ('classif','imagenet.py',106,'DET611'): 'FP', ('classif','imagenet.py',162,'DET604'): 'TP',
 ('nerftf','run_nerf.py',390,'DET101'): 'TP', ('nerftf','run_nerf.py',742,'DET103'): 'TP',
 ('flaxmodels','training/resnet/training.py',119,'DET404'): 'TP',
 ('ntk','examples/function_space.py',62,'DET701'): 'TP', ('ntk','examples/weight_space.py',73,'DET701'): 'TP',
 ('ntk','notebooks/function_space_linearization.ipynb',2,'DET701'): 'TP',
 ('ntk','notebooks/neural_tangents_cookbook.ipynb',2,'DET701'): 'TP',
 ('ntk','notebooks/weight_space_linearization.ipynb',1,'DET701'): 'TP',
 ('isr','ISR/assistant.py',45,'DET201'): 'TP',  # now TF 2.1 (git dates): TF_DETERMINISTIC_OPS fits 2.4
}
new_found = {'classif': 7, 'nerftf': 2, 'flaxmodels': 1, 'ntk': 5}
tot = {'all': [0,0], 'default': [0,0]}
for n in names:
    first = json.load(open(base/'runs'/f'{n}.json'))
    judged = [json.loads(l) for l in open(base/f'judged-{n}.jsonl') if l.strip()]
    verdict = {j['index']: j['verdict'] for j in judged if j['kind']=='finding'}
    rel = lambda f: f['filename'].split(f'/repos/{n}/',1)[1] if f'/repos/{n}/' in f['filename'] else f['filename']
    old = {(n, rel(f), f['location']['row'], f['code']): verdict.get(i) for i, f in enumerate(first)}
    for f in json.load(open(rerun/f'{n}.json')):
        k = (n, rel(f), f['location']['row'], f['code'])
        v = manual.get(k) or old.get(k)
        assert v, k
        for level in ('all', 'default'):
            if level == 'default' and f['confidence'] == 'possible':
                continue
            tot[level][0] += v == 'TP'; tot[level][1] += 1
print({k: f"{a}/{b} = {a/b:.2f}" for k, (a, b) in tot.items()})
