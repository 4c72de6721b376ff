// NCCL's single-node NVLS all-reduce pipeline: its chunk and loop sizes, and the time it takes
// to fill and drain.
//
// The kernel (NCCL src/device/all_reduce.h, RunWorkElement<..., NCCL_ALGO_NVLS, ...>) runs three
// groups of warps per channel: scatter (copy the input into the heads' NVLS buffers), reduce
// (the head's multimem.ld_reduce through the switch, then multimem.st to every GPU) and gather
// (copy the result out). The message moves in loops of
//     loop = channels x heads x chunk
// bytes: channel c of loop i carries heads x chunk bytes, one chunk per head rank. The chunk is
// NCCL's (src/enqueue.cc, computeColl): the largest chunk C (128 KiB), cut to 64 KiB, 32 KiB or
// 16 KiB when the message S is under 64, 8 or 2 loops of channels x heads x (the chunk so far).
//
// Fill and drain. The three groups form a pipeline whose stages hand over loop by loop: the
// reduce of loop i waits until every GPU has scattered it, the gather until the head has stored
// it. So the first loop runs its stages one after the other, and so does the last: the pipeline
// adds two stage times to S / rate. A stage time is the time of the busiest channel's share of
// one loop, min(S, heads x chunk), at its share (rate / channels) of the collective's rate
// (assumption: the channels share the switch port and the NVLinks equally):
//     t_fill = 2 x channels x min(S, heads x chunk) / rate
// which this file gives as fill_bytes = 2 x channels x min(S, heads x chunk), to be moved at the
// collective's rate. On 8 H100 (16 channels, 8 heads, rate 275 GB/s) it is 0.9 us at 8 KiB,
// 15 us at 1 MiB (16 KiB chunks), 30 us at 8 MiB (32 KiB), 61 us at 64 and 256 MiB (64 KiB:
// 6% of the time at 256 MiB) and 122 us from 1 GiB on (128 KiB chunks: 3% at 1 GiB).
#pragma once

#include <cstdint>

#include "core/units.h"

namespace cs::coll {

// The chunk NCCL uses for an NVLS all-reduce of `size` bytes over `heads` head ranks.
Bytes nvls_chunk(Bytes size, int channels, int heads, Bytes max_chunk);

// The bytes whose transfer at the collective's rate is the pipeline's fill and drain time.
Bytes nvls_fill_bytes(Bytes size, int channels, int heads, Bytes max_chunk);

}  // namespace cs::coll
