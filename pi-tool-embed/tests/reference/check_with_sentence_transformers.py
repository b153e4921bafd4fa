"""Checks tests/fixtures/minilm_reference.json and mpnet_reference.json against
sentence-transformers itself: the official library's embeddings of the fixture's texts, from the
same model folder, and the largest difference per text (2026-12-05: sentence-transformers 6.3.0,
torch 2.15.0, transformers 5.25.0; at most 2.5e-7 on all six texts for all-MiniLM-L6-v2, 2.9e-7
for all-mpnet-base-v2; the crate's tests allow 1e-4).

torch on PyPI needs its CUDA libraries even on the CPU, so this is run by hand, not in CI:

    pip install --target /tmp/st/torch --no-deps torch==2.15.0
    pip install --target /tmp/st/cuda "cuda-toolkit[cublas,cudart,cufft,cufile,cupti,cusolver,cusparse,nvjitlink,nvrtc,nvtx]==13.2.2" \
        nvidia-cudnn-cu13==9.26.0.51 nvidia-cusparselt-cu13==0.8.1 nvidia-nccl-cu13==2.30.7 nvidia-nvshmem-cu13==3.7.2
    pip install --target /tmp/st/lib sentence-transformers==6.3.0 kernels==0.19.1
    HF_HUB_OFFLINE=1 PYTHONPATH=/tmp/st/torch:/tmp/st/cuda:/tmp/st/lib \
        python3 check_with_sentence_transformers.py MODEL_DIR ../fixtures/minilm_reference.json
    (the same with the all-mpnet-base-v2 folder and ../fixtures/mpnet_reference.json)

Exit status 1 when a text differs by more than 1e-5.
"""
import json
import sys

import numpy as np
import sentence_transformers
import torch
from sentence_transformers import SentenceTransformer

model = SentenceTransformer(sys.argv[1], device="cpu")
reference = json.load(open(sys.argv[2]))
print(f"sentence-transformers {sentence_transformers.__version__}, torch {torch.__version__}, "
      f"max_seq_length {model.max_seq_length}")
embeddings = model.encode([entry["text"] for entry in reference], convert_to_numpy=True)
worst = 0.0
for entry, embedding in zip(reference, embeddings):
    difference = float(np.abs(np.array(entry["embedding"]) - embedding).max())
    worst = max(worst, difference)
    print(f"{entry['text'][:40]!r}: largest difference {difference:.2e}")
sys.exit(0 if worst <= 1e-5 else 1)
