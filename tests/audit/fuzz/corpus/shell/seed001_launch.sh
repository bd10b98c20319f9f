#!/bin/bash
# Seed 001 layout with the mistakes the audit must find (see tests/audit/fixture_audit_test.cpp).
set -euo pipefail
NNODES=${NNODES:-1}
NPROC_PER_NODE=6
MASTER_ADDR=${MASTER_ADDR:-127.0.0.1}
MASTER_PORT=29500

torchrun \
  --nnodes "$NNODES" \
  --nproc_per_node "$NPROC_PER_NODE" \
  --master_addr "$MASTER_ADDR" \
  --master_port "$MASTER_PORT" \
  train.py --config configs/pp4.yaml \
    --micro-batch-size 4 \
    --split-points 8 16 24
