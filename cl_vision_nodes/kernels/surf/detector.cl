// Copyright 2026 cl_vision_nodes maintainers
//
// Licensed under the Apache License, Version 2.0 (the "License");
// you may not use this file except in compliance with the License.
// You may obtain a copy of the License at
//
//     http://www.apache.org/licenses/LICENSE-2.0
//
// Unless required by applicable law or agreed to in writing, software
// distributed under the License is distributed on an "AS IS" BASIS,
// WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
// See the License for the specific language governing permissions and
// limitations under the License.

// SURF Fast-Hessian detector, launched by cl_vision_nodes/surf/detector.py (HessianDetector):
// Hessian responses, maxima, selection of the strongest and their order. Built after
// kernels/surf/common.cl (box sums, keypoint record, no fp contraction).
//
// Build defines (surf/detector.py): HAAR_SIZE0, HAAR_SIZE_INC (filter sizes), EDGE_FIELDS
// (ints per filter table entry), HISTOGRAM_BINS, CUT_WG (select_cut's work-group size),
// RANK_ITEMS x RANK_SPLIT (rank_keypoints' work-group); the work-group sizes are chosen from the
// device's limits.
#if !defined(HAAR_SIZE0) || !defined(HAAR_SIZE_INC) || !defined(EDGE_FIELDS) \
    || !defined(HISTOGRAM_BINS) || !defined(CUT_WG) || !defined(RANK_ITEMS) || !defined(RANK_SPLIT)
#error "surf/detector.cl: build with the defines of cl_vision_nodes/surf/detector.py"
#endif

inline int layer_size(int octave, int layer)
{
    return (HAAR_SIZE0 + HAAR_SIZE_INC * layer) << octave;
}

// Filter tables, one entry per (octave, layer) in det order (cl_vision_nodes/surf/detector.py):
// `edges` holds OpenCV's resizeHaarPattern coordinates cvRound(size / 9 * k) for k = 1..8 and
// the size, `weights` 1 / area of the Dxx/Dyy lobes and of the Dxy lobes. They are computed on
// the host because OpenCL's default float division is not correctly rounded on every device
// (NVIDIA's is within 2.5 ulp), and the weights must be OpenCV's floats to the last bit.
#if EDGE_FIELDS != 9
#error "hessian_at reads 8 pattern edges and the filter size per table entry"
#endif

// Dxx, Dyy, Dxy of the filter of table entry `e` whose top-left integral corner is (top, left);
// each lobe divided by its area. The lobes of one filter have equal areas for every SURF size, so
// each derivative is one integer combination times one float weight: the same float that
// OpenCV's double accumulation rounds to.
inline float3 hessian_at(__global const uint* integ, const size_t stride, int top, int left,
                         __global const int* e, __global const float* w)
{
    const int e1 = e[0], e2 = e[1], e3 = e[2], e4 = e[3], e5 = e[4], e6 = e[5], e7 = e[6];
    const int e8 = e[7], size = e[8];
    const int bottom = top + size, right = left + size;
    const int xx = box_sum(integ, stride, top + e2, left, top + e7, left + e3)
                   - 2 * box_sum(integ, stride, top + e2, left + e3, top + e7, left + e6)
                   + box_sum(integ, stride, top + e2, left + e6, top + e7, right);
    const int yy = box_sum(integ, stride, top, left + e2, top + e3, left + e7)
                   - 2 * box_sum(integ, stride, top + e3, left + e2, top + e6, left + e7)
                   + box_sum(integ, stride, top + e6, left + e2, bottom, left + e7);
    const int xy = box_sum(integ, stride, top + e1, left + e1, top + e4, left + e4)
                   - box_sum(integ, stride, top + e1, left + e5, top + e4, left + e8)
                   - box_sum(integ, stride, top + e5, left + e1, top + e8, left + e4)
                   + box_sum(integ, stride, top + e5, left + e5, top + e8, left + e8);
    return (float3)((float)xx * w[0], (float)yy * w[0], (float)xy * w[1]);
}

// ------------------------------------------------------------------------------------------
// Scale space. Octave o samples every 2^o pixels; its layers are (H >> o) x (W >> o) and stored
// one after the other, octave after octave, in one buffer. Sample (i, j) of a layer of filter
// `size` is the filter whose top-left integral corner is 2^o * (i - m, j - m) with
// m = (size / 2) >> o (OpenCV's layout), or 0 where the filter leaves the image.

// Find the octave of a flat index over `per_layer` layers per octave; returns the index within
// the octave and sets the octave, its first det element and its layer shape.
inline int locate_octave(int index, int octaves, int per_layer, int all_layers, int width,
                         int height, int* octave, int* base, int* rows, int* cols)
{
    int start = 0;
    *base = 0;
    for (int o = 0; o < octaves; ++o) {
        const int r = height >> o, c = width >> o;
        const int count = per_layer * r * c;
        *octave = o;
        *rows = r;
        *cols = c;
        if (index < start + count)
            return index - start;
        start += count;
        *base += all_layers * r * c;
    }
    *octave = -1;
    return 0;
}

__kernel void hessian(__global const uint* integ, const int width, const int height,
                      const int octaves, const int layers, const int total,
                      __global const int* edges, __global const float* weights,
                      __global float* det)
{
    const int index = get_global_id(0);
    if (index >= total)
        return;
    int octave, base, rows, cols;
    const int local_index = locate_octave(index, octaves, layers, layers, width, height,
                                          &octave, &base, &rows, &cols);
    const int layer = local_index / (rows * cols);
    const int i = (local_index / cols) % rows;
    const int j = local_index % cols;
    const int size = layer_size(octave, layer);
    const int margin = (size >> 1) >> octave;
    const int ti = i - margin, tj = j - margin;
    float value = 0.0f;
    if (size <= height && size <= width && ti >= 0 && tj >= 0
        && ti <= (height - size) >> octave && tj <= (width - size) >> octave) {
        const int entry = octave * layers + layer;
        const float3 h = hessian_at(integ, (size_t)width + 1, ti << octave, tj << octave,
                                    edges + entry * EDGE_FIELDS, weights + entry * 2);
        value = h.x * h.y - 0.81f * h.z * h.z;
    }
    det[index] = value;  // flat index == det layout: octave-major, then layer, row, column
}

// ------------------------------------------------------------------------------------------
// Maxima: strict 3x3x3 maximum above the threshold, one Newton step (Brown & Lowe) kept when
// every offset is within 1 and not all zero, laplacian = sign of Dxx + Dyy at the sample.
// Candidates are appended with an atomic counter; `capacity` bounds the stores while the counter
// keeps counting, so the host sees an overflow and can retry with a larger buffer.

__kernel void detect(__global const uint* integ, __global const float* det, const int width,
                     const int height, const int octaves, const int octave_layers,
                     const int total, __global const int* edges,
                     __global const float* weights, const float threshold,
                     __global uint* counter, const uint capacity, __global float4* cand_f,
                     __global int4* cand_i)
{
    const int index = get_global_id(0);
    if (index >= total)
        return;
    const int all_layers = octave_layers + 2;
    int octave, base, rows, cols;
    const int local_index = locate_octave(index, octaves, octave_layers, all_layers, width,
                                          height, &octave, &base, &rows, &cols);
    const int layer = 1 + local_index / (rows * cols);
    const int i = (local_index / cols) % rows;
    const int j = local_index % cols;
    const int margin = ((layer_size(octave, layer + 1) >> 1) >> octave) + 1;
    if (i < margin || i >= rows - margin || j < margin || j >= cols - margin)
        return;
    const int plane = rows * cols;
    __global const float* mid = det + base + layer * plane + i * cols + j;
    const float val0 = mid[0];
    if (!(val0 > threshold))
        return;
    float n9[3][9];
    for (int l = 0; l < 3; ++l)
        for (int k = 0; k < 9; ++k)
            n9[l][k] = mid[(l - 1) * plane + (k / 3 - 1) * cols + (k % 3 - 1)];
    for (int l = 0; l < 3; ++l)
        for (int k = 0; k < 9; ++k)
            if ((l != 1 || k != 4) && !(val0 > n9[l][k]))
                return;

    // Newton step: A x = b with OpenCV's central differences, solved by Cramer's rule in float
    // as cv::Matx<float,3,3>::solve(DECOMP_LU) does.
    const float b0 = -(n9[1][5] - n9[1][3]) / 2, b1 = -(n9[1][7] - n9[1][1]) / 2;
    const float b2 = -(n9[2][4] - n9[0][4]) / 2;
    const float a00 = n9[1][3] - 2 * n9[1][4] + n9[1][5];
    const float a01 = (n9[1][8] - n9[1][6] - n9[1][2] + n9[1][0]) / 4;
    const float a02 = (n9[2][5] - n9[2][3] - n9[0][5] + n9[0][3]) / 4;
    const float a11 = n9[1][1] - 2 * n9[1][4] + n9[1][7];
    const float a12 = (n9[2][7] - n9[2][1] - n9[0][7] + n9[0][1]) / 4;
    const float a22 = n9[0][4] - 2 * n9[1][4] + n9[2][4];
    const float a10 = a01, a20 = a02, a21 = a12;
    float d = a00 * (a11 * a22 - a21 * a12) - a01 * (a10 * a22 - a20 * a12)
              + a02 * (a10 * a21 - a20 * a11);
    if (d == 0.0f)
        return;
    d = 1 / d;
    const float x0 = d * (b0 * (a11 * a22 - a12 * a21) - a01 * (b1 * a22 - a12 * b2)
                          + a02 * (b1 * a21 - a11 * b2));
    const float x1 = d * (a00 * (b1 * a22 - a12 * b2) - b0 * (a10 * a22 - a12 * a20)
                          + a02 * (a10 * b2 - b1 * a20));
    const float x2 = d * (a00 * (a11 * b2 - b1 * a21) - a01 * (a10 * b2 - b1 * a20)
                          + b0 * (a10 * a21 - a11 * a20));
    if (!((x0 != 0 || x1 != 0 || x2 != 0) && fabs(x0) <= 1 && fabs(x1) <= 1 && fabs(x2) <= 1))
        return;

    const int size = layer_size(octave, layer);
    const int step = 1 << octave;
    const int top = step * (i - ((size >> 1) >> octave));
    const int left = step * (j - ((size >> 1) >> octave));
    const int entry = octave * all_layers + layer;
    const float3 h = hessian_at(integ, (size_t)width + 1, top, left,
                                edges + entry * EDGE_FIELDS, weights + entry * 2);
    const float trace = h.x + h.y;
    const float center_y = top + (size - 1) * 0.5f;
    const float center_x = left + (size - 1) * 0.5f;
    const int ds = size - layer_size(octave, layer - 1);
    const uint slot = atomic_inc(counter);
    if (slot < capacity) {
        cand_f[slot] = (float4)(center_x + x0 * step, center_y + x1 * step,
                                rint((float)size + x2 * ds), val0);
        cand_i[slot] = (int4)(octave, (trace > 0) - (trace < 0), index, 0);
    }
}

// ------------------------------------------------------------------------------------------
// Selection and order. The output order is OpenCV's KeypointGreater (response, size, octave
// descending, then y descending, x ascending) with the unique sample index as the last key, so
// the order is total and independent of the atomic append order.

inline bool precedes(float4 af, int4 ai, float4 bf, int4 bi)
{
    if (af.w != bf.w) return af.w > bf.w;
    if (af.z != bf.z) return af.z > bf.z;
    if (ai.x != bi.x) return ai.x > bi.x;
    if (af.y != bf.y) return af.y > bf.y;
    if (af.x != bf.x) return af.x < bf.x;
    return ai.z < bi.z;
}

// Responses are positive floats, whose bit patterns order like the values: the top 16 bits
// make a HISTOGRAM_BINS (32768) histogram of ~0.8 % relative width. select_cut splits the bins
// into CUT_WG chunks of HIST_PER; any power-of-two CUT_WG up to the bin count gives the same cut.
#if HISTOGRAM_BINS != 32768
#error "response_bin keeps the top 16 bits of a positive float: HISTOGRAM_BINS must be 32768"
#endif
#if HISTOGRAM_BINS % CUT_WG != 0
#error "select_cut: CUT_WG must divide HISTOGRAM_BINS (whole chunks of bins)"
#endif
#define HIST_PER (HISTOGRAM_BINS / CUT_WG)
inline uint response_bin(float response)
{
    return as_uint(response) >> 16;
}

// `histogram` holds HISTOGRAM_BINS bins, then CUT_WG chunk totals (HIST_PER bins per chunk).
__kernel void response_histogram(__global const float4* cand_f, const int count,
                                 __global uint* histogram)
{
    const int k = get_global_id(0);
    if (k < count) {
        const uint bin = response_bin(cand_f[k].w);
        atomic_inc(&histogram[bin]);
        atomic_inc(&histogram[HISTOGRAM_BINS + bin / HIST_PER]);
    }
}

// One work-group: the highest bin `cut` such that the bins >= cut hold at least `keep`
// candidates. Work-item t owns chunk t (bins [t * HIST_PER, (t + 1) * HIST_PER) and its total);
// the chunk that holds the cut is loaded into local memory by the whole group (HIST_PER may
// exceed CUT_WG) and searched bin by bin. Leaves the histogram zeroed, clearing only the chunks
// that were used.
__kernel __attribute__((reqd_work_group_size(CUT_WG, 1, 1)))
void select_cut(__global uint* histogram, const uint keep, __global uint* cut)
{
    __local uint chunk_total[CUT_WG];
    __local uint bin_count[HIST_PER];
    __local int chunk_hit;
    __local uint need;
    const int lid = get_local_id(0);
    const int per = HIST_PER;
    __global uint* own = histogram + lid * per;
    const uint total = histogram[HISTOGRAM_BINS + lid];
    chunk_total[lid] = total;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid == 0) {
        uint acc = 0;
        int c = CUT_WG - 1;
        while (c > 0 && acc + chunk_total[c] < keep)
            acc += chunk_total[c--];
        chunk_hit = c;
        need = keep - acc;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int b = lid; b < per; b += CUT_WG)
        bin_count[b] = histogram[chunk_hit * per + b];
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid == 0) {
        uint acc = 0;
        int b = per - 1;
        while (b > 0 && acc + bin_count[b] < need)
            acc += bin_count[b--];
        cut[0] = (uint)(chunk_hit * per + b);
    }
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);  // bin_count was read from the bins
    if (total > 0) {
        histogram[HISTOGRAM_BINS + lid] = 0u;
        for (int b = 0; b < per; ++b)
            own[b] = 0u;
    }
}

__kernel void compact_selected(__global const float4* cand_f, __global const int4* cand_i,
                               const int count, __global const uint* cut,
                               __global uint* selected, __global float4* sel_f,
                               __global int4* sel_i)
{
    const int k = get_global_id(0);
    if (k < count && response_bin(cand_f[k].w) >= cut[0]) {
        const uint slot = atomic_inc(selected);
        sel_f[slot] = cand_f[k];
        sel_i[slot] = cand_i[k];
    }
}

// Rank of every candidate = number of candidates before it in the total order; the first `keep`
// are written to their rank in the keypoint list. A work-group holds RANK_ITEMS candidates and
// streams all responses through local memory in tiles of RANK_ITEMS x RANK_SPLIT; each of its
// RANK_SPLIT rows of work-items compares its candidates with one slice of every tile (so even a
// few thousand candidates fill a GPU), and the partial ranks are summed at the end. O(n^2)
// compares in total, of the response alone unless it ties; the histogram cut keeps n near
// `keep` when there are many more candidates.
#define RANK_TILE (RANK_ITEMS * RANK_SPLIT)
__kernel __attribute__((reqd_work_group_size(RANK_ITEMS, RANK_SPLIT, 1)))
void rank_keypoints(__global const float4* cand_f, __global const int4* cand_i,
                    __global const uint* count_at, const int keep, const int kp_stride,
                    __global float* keypoints)
{
    __local float tile[RANK_TILE];
    __local int partial[RANK_SPLIT][RANK_ITEMS];
    const int count = (int)count_at[0];
    const int lx = get_local_id(0), ly = get_local_id(1);
    const int flat = ly * RANK_ITEMS + lx;
    const int k = get_global_id(0);
    // Work-items past the count skip the compares but still reach every barrier: no early
    // return before a barrier, not even a uniform one (PoCL mis-handles that here).
    const bool active = k < count;
    const float4 own_f = active ? cand_f[k] : (float4)(0.0f);
    const int4 own_i = active ? cand_i[k] : (int4)(0);
    int rank = 0;
    for (int start = 0; start < count; start += RANK_TILE) {
        if (start + flat < count)
            tile[flat] = cand_f[start + flat].w;
        barrier(CLK_LOCAL_MEM_FENCE);
        const int first = ly * RANK_ITEMS;
        const int last = active ? min(first + RANK_ITEMS, count - start) : first;
        for (int t = first; t < last; ++t) {
            const float response = tile[t];
            if (response > own_f.w)
                ++rank;
            else if (response == own_f.w)
                rank += precedes(cand_f[start + t], cand_i[start + t], own_f, own_i);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    partial[ly][lx] = rank;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (ly == 0 && active) {
        for (int row = 1; row < RANK_SPLIT; ++row)
            rank += partial[row][lx];
        if (rank < keep) {
            __global float* kp = keypoints + (size_t)rank * kp_stride;
            kp[KP_X] = own_f.x;
            kp[KP_Y] = own_f.y;
            kp[KP_SIZE] = own_f.z;
            kp[KP_ANGLE] = 0.0f;
            kp[KP_RESPONSE] = own_f.w;
            kp[KP_OCTAVE] = (float)own_i.x;
            kp[KP_LAPLACIAN] = (float)own_i.y;
            kp[KP_VALID] = 1.0f;
        }
    }
}
