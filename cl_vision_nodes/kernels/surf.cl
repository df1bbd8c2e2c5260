// SURF on the device: integral image, Hessian responses, maxima, selection, orientation and
// descriptors. Semantics follow OpenCV's surf.cpp (opencv_contrib, xfeatures2d); the module
// docstrings of cl_vision_nodes/surf/*.py list where and why this code deviates.
//
// Build defines (cl_vision_nodes/surf/device.py): INT_WG, INT_STRIP (integral blocks),
// RANK_ITEMS x RANK_SPLIT, CUT_WG, ORI_WG, DESC_WG (work-group sizes), ORI_SAMPLES (orientation
// samples, 113), KP_FIELDS (floats of a keypoint record before its descriptor), HISTOGRAM_BINS.
//
// Contraction into fma is off so that the detector's float arithmetic (responses, the Newton
// step, orientation sample positions and fastAtan2) rounds like OpenCV's C++ code, which has no
// fma either. With the filter weights divided on the host, the responses are OpenCV's bit for
// bit on PoCL and on NVIDIA (test_surf_kernels checks them against the NumPy reference).
#pragma OPENCL FP_CONTRACT OFF

#define HAAR_SIZE0 9
#define HAAR_SIZE_INC 6
#define ORI_SEARCH_INC 5
#define ORI_WIN 60
#define ORI_DIRECTIONS (360 / ORI_SEARCH_INC)
#define PATCH_SZ 20
#define PATCH_PTS ((PATCH_SZ + 1) * (PATCH_SZ + 1))
// Keypoint record: KP_FIELDS floats x, y, size, angle, response, octave, laplacian, valid, then
// the descriptor (64 or 128 floats); `kp_stride` arguments give the record length.
#define KP_X 0
#define KP_Y 1
#define KP_SIZE 2
#define KP_ANGLE 3
#define KP_RESPONSE 4
#define KP_OCTAVE 5
#define KP_LAPLACIAN 6
#define KP_VALID 7

// ------------------------------------------------------------------------------------------
// Integral image: (H+1)x(W+1) uint32, row 0 and column 0 zero, exact for 8-bit input while
// 255*W*H < 2^32. Blocked scan in three kernels (seed 002): each work-group scans one block of
// INT_WG columns x INT_STRIP rows locally; the carries of the blocks to the left (per row) and of
// the strips above (per column) are scanned next; a last pass adds them.

inline uint gray_level(float g)
{
    // Intensities are integers 0..255 (OpenCV SURF takes 8-bit images); NaN becomes 0.
    return min(convert_uint_sat_rte(g), 255u);
}

__kernel __attribute__((reqd_work_group_size(INT_WG, 1, 1)))
void integral_blocks(__global const float* gray, const int width, const int height,
                     __global uint* integ, __global uint* row_totals)
{
    __local uint scan[INT_WG];
    const int lx = get_local_id(0);
    const int block = get_group_id(0);
    const int blocks = get_num_groups(0);
    const int x = block * INT_WG + lx;
    const int y0 = get_group_id(1) * INT_STRIP;
    const int rows = min(INT_STRIP, height - y0);  // the same for the whole group
    const size_t stride = (size_t)width + 1;
    uint column = 0;  // this column's sum over the strip's rows so far
    for (int r = 0; r < rows; ++r) {
        const int y = y0 + r;
        column += x < width ? gray_level(gray[(size_t)y * width + x]) : 0u;
        scan[lx] = column;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int offset = 1; offset < INT_WG; offset <<= 1) {  // Hillis-Steele inclusive scan
            const uint left = lx >= offset ? scan[lx - offset] : 0u;
            barrier(CLK_LOCAL_MEM_FENCE);
            scan[lx] += left;
            barrier(CLK_LOCAL_MEM_FENCE);
        }
        if (x < width)
            integ[(size_t)(y + 1) * stride + x + 1] = scan[lx];
        if (lx == 0)
            row_totals[(size_t)y * blocks + block] = scan[INT_WG - 1];
        barrier(CLK_LOCAL_MEM_FENCE);  // scan[] is rewritten by the next row
    }
}

__kernel void integral_carries(__global const uint* integ, __global const uint* row_totals,
                               const int width, const int height, const int blocks,
                               __global uint* row_carry, __global uint* strip_carry)
{
    const int id = get_global_id(0);
    if (id < height) {
        // Row id: exclusive prefix of the block totals, i.e. the sum of the strip's rows up to
        // id over all columns left of each block.
        uint acc = 0;
        for (int b = 0; b < blocks; ++b) {
            row_carry[(size_t)id * blocks + b] = acc;
            acc += row_totals[(size_t)id * blocks + b];
        }
    } else if (id < height + width) {
        // Column x: exclusive prefix over strips of the strip's full sum over columns 0..x.
        const int x = id - height;
        const int block = x / INT_WG;
        const int strips = (height + INT_STRIP - 1) / INT_STRIP;
        uint acc = 0;
        for (int s = 0; s < strips; ++s) {
            strip_carry[(size_t)s * width + x] = acc;
            const int last = min((s + 1) * INT_STRIP, height) - 1;
            acc += integ[(size_t)(last + 1) * ((size_t)width + 1) + x + 1];
            for (int b = 0; b < block; ++b)
                acc += row_totals[(size_t)last * blocks + b];
        }
    }
}

__kernel void integral_combine(__global uint* integ, __global const uint* row_carry,
                               __global const uint* strip_carry, const int width,
                               const int height, const int blocks)
{
    const int x = get_global_id(0);
    const int y = get_global_id(1);
    if (x > width || y > height)
        return;
    const size_t at = (size_t)y * ((size_t)width + 1) + x;
    if (x == 0 || y == 0) {
        integ[at] = 0u;
        return;
    }
    integ[at] += row_carry[(size_t)(y - 1) * blocks + (x - 1) / INT_WG]
                 + strip_carry[(size_t)((y - 1) / INT_STRIP) * width + x - 1];
}

// ------------------------------------------------------------------------------------------
// Box sums on the integral image. Differences of uint32 wrap exactly, so a box sum is exact even
// where the corner values themselves exceed 2^24 (where float would round).

inline int box_sum(__global const uint* integ, const size_t stride, int top, int left,
                   int bottom, int right)
{
    return (int)(integ[bottom * stride + right] - integ[top * stride + right]
                 - integ[bottom * stride + left] + integ[top * stride + left]);
}

inline int layer_size(int octave, int layer)
{
    return (HAAR_SIZE0 + HAAR_SIZE_INC * layer) << octave;
}

// Filter tables, one entry per (octave, layer) in det order (cl_vision_nodes/surf/detector.py):
// `edges` holds OpenCV's resizeHaarPattern coordinates cvRound(size / 9 * k) for k = 1..8 and
// the size, `weights` 1 / area of the Dxx/Dyy lobes and of the Dxy lobes. They are computed on
// the host because OpenCL's default float division is not correctly rounded on every device
// (NVIDIA's is within 2.5 ulp), and the weights must be OpenCV's floats to the last bit.
#define EDGE_FIELDS 9

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
// make a HISTOGRAM_BINS (32768) histogram of ~0.8 % relative width.
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
// the chunk that holds the cut is searched bin by bin, from local memory. Leaves the histogram
// zeroed, clearing only the chunks that were used.
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
    if (lid < per)
        bin_count[lid] = histogram[chunk_hit * per + lid];
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

// ------------------------------------------------------------------------------------------
// Orientation: one work-group per keypoint. OpenCV's sampling: 113 points of a radius-6 disc
// scaled by s = 1.2 size / 9, Haar wavelets of side 2 round(2 s), Gaussian weights (sigma 2.5 s,
// from the table), a 60-degree window slid in 5-degree steps over the rounded sample angles.

// OpenCV's fastAtan2 (polynomial, degrees in [0, 360]); reproduced so that the rounded sample
// angles, and so the window contents, are OpenCV's.
inline float fast_atan2_deg(float y, float x)
{
    const float p1 = 0.9997878412794807f * 57.29577951308232f;
    const float p3 = -0.3258083974640975f * 57.29577951308232f;
    const float p5 = 0.1555786518463281f * 57.29577951308232f;
    const float p7 = -0.04432655554792128f * 57.29577951308232f;
    const float eps = 2.220446049250313e-16f;
    const float ax = fabs(x), ay = fabs(y);
    float a;
    if (ax >= ay) {
        const float c = ay / (ax + eps), c2 = c * c;
        a = (((p7 * c2 + p5) * c2 + p3) * c2 + p1) * c;
    } else {
        const float c = ax / (ay + eps), c2 = c * c;
        a = 90.0f - (((p7 * c2 + p5) * c2 + p3) * c2 + p1) * c;
    }
    if (x < 0)
        a = 180.0f - a;
    if (y < 0)
        a = 360.0f - a;
    return a;
}

__kernel __attribute__((reqd_work_group_size(ORI_WG, 1, 1)))
void orientation(__global const uint* integ, const int width, const int height,
                 __global float* keypoints, const int kp_stride, __global const float4* samples,
                 const int upright)
{
    __local float sx[ORI_SAMPLES], sy[ORI_SAMPLES];
    __local int sangle[ORI_SAMPLES];
    __local float wx[ORI_DIRECTIONS], wy[ORI_DIRECTIONS];
    const int lid = get_local_id(0);
    __global float* kp = keypoints + (size_t)get_group_id(0) * kp_stride;
    const float cx = kp[KP_X], cy = kp[KP_Y];
    const float s = kp[KP_SIZE] * 1.2f / 9.0f;
    const int grad = 2 * (int)rint(2 * s);
    const size_t stride = (size_t)width + 1;
    const bool fits = height + 1 >= grad && width + 1 >= grad;

    if (lid < ORI_SAMPLES) {
        const float4 p = samples[lid];
        const int x = (int)rint(cx + p.x * s - (float)(grad - 1) / 2);
        const int y = (int)rint(cy + p.y * s - (float)(grad - 1) / 2);
        float vx = 0.0f, vy = 0.0f;
        int angle = -1000;  // marks a sample outside the image (never inside the window)
        if (!upright && fits && y >= 0 && y < height + 1 - grad && x >= 0
            && x < width + 1 - grad) {
            const int mid = grad / 2;
            const float w = 1.0f / ((float)mid * (float)grad);
            const int left = box_sum(integ, stride, y, x, y + grad, x + mid);
            const int right = box_sum(integ, stride, y, x + mid, y + grad, x + grad);
            const int upper = box_sum(integ, stride, y, x, y + mid, x + grad);
            const int lower = box_sum(integ, stride, y + mid, x, y + grad, x + grad);
            vx = (float)(right - left) * w * p.z;
            vy = (float)(upper - lower) * w * p.z;
            angle = (int)rint(fast_atan2_deg(vy, vx));
        }
        sx[lid] = vx;
        sy[lid] = vy;
        sangle[lid] = angle;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid < ORI_DIRECTIONS) {
        const int dir = lid * ORI_SEARCH_INC;
        float sumx = 0.0f, sumy = 0.0f;
        for (int t = 0; t < ORI_SAMPLES; ++t) {
            const int d = abs(sangle[t] - dir);
            if (sangle[t] >= 0 && (d < ORI_WIN / 2 || d > 360 - ORI_WIN / 2)) {
                sumx += sx[t];
                sumy += sy[t];
            }
        }
        wx[lid] = sumx;
        wy[lid] = sumy;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid == 0) {
        bool sampled = false;
        for (int t = 0; t < ORI_SAMPLES; ++t)
            sampled = sampled || sangle[t] >= 0;
        float best = 0.0f, bestx = 0.0f, besty = 0.0f;
        for (int k = 0; k < ORI_DIRECTIONS; ++k) {
            const float mod = wx[k] * wx[k] + wy[k] * wy[k];
            if (mod > best) {
                best = mod;
                bestx = wx[k];
                besty = wy[k];
            }
        }
        // OpenCV drops a keypoint whose wavelet does not fit the image or that has no sample
        // inside it; upright keypoints get 270 degrees (its "360 - 90").
        kp[KP_ANGLE] = upright ? 270.0f : fast_atan2_deg(-besty, bestx);
        kp[KP_VALID] = (fits && (upright || sampled)) ? 1.0f : 0.0f;
    }
}

// ------------------------------------------------------------------------------------------
// Descriptor: one work-group per keypoint. A 21x21 patch of cells of side r = int(21 s) / 21
// on the grid rotated to the keypoint angle (OpenCV's window), each cell the exact mean of the
// pixel-constant image over an axis-aligned r x r square (bilinear interpolation of the integral
// image); then OpenCV's 2x2 differences weighted by a 20x20 Gaussian (sigma 3.3 s) summed over
// 4x4 subregions of 5x5 samples, L2-normalised.

// Integral of the pixel-constant image over [x0, x1] x [y0, y1] (integral-image coordinates:
// pixel (c, r) covers [c, c+1] x [r, r+1]); requires 0 <= x0 <= x1 <= width, same in y.
// Bilinear interpolation of the integral image is that integral exactly; it is evaluated as an
// integer box plus fractional strips and corners, all integer differences, so no large value
// is ever rounded to float.
inline float area_sum(__global const uint* integ, const size_t stride, int width, int height,
                      float x0, float y0, float x1, float y1)
{
    const int ix0 = min((int)floor(x0), width - 1), ix1 = min((int)floor(x1), width - 1);
    const int iy0 = min((int)floor(y0), height - 1), iy1 = min((int)floor(y1), height - 1);
    const float fx0 = x0 - ix0, fx1 = x1 - ix1, fy0 = y0 - iy0, fy1 = y1 - iy1;
    const int inner = box_sum(integ, stride, iy0, ix0, iy1, ix1);
    const int col0 = box_sum(integ, stride, iy0, ix0, iy1, ix0 + 1);
    const int col1 = box_sum(integ, stride, iy0, ix1, iy1, ix1 + 1);
    const int row0 = box_sum(integ, stride, iy0, ix0, iy0 + 1, ix1);
    const int row1 = box_sum(integ, stride, iy1, ix0, iy1 + 1, ix1);
    const int p00 = box_sum(integ, stride, iy0, ix0, iy0 + 1, ix0 + 1);
    const int p01 = box_sum(integ, stride, iy0, ix1, iy0 + 1, ix1 + 1);
    const int p10 = box_sum(integ, stride, iy1, ix0, iy1 + 1, ix0 + 1);
    const int p11 = box_sum(integ, stride, iy1, ix1, iy1 + 1, ix1 + 1);
    return (float)inner + fx1 * col1 - fx0 * col0 + fy1 * row1 - fy0 * row0
           + fx1 * fy1 * p11 - fx0 * fy1 * p10 - fx1 * fy0 * p01 + fx0 * fy0 * p00;
}

// Mean over the side x side square centred on pixel coordinates (cx, cy), shifted inside the
// image where it would cross the border (OpenCV replicates border pixels instead).
inline float cell_mean(__global const uint* integ, const size_t stride, int width, int height,
                       float cx, float cy, float side)
{
    const float sw = min(side, (float)width), sh = min(side, (float)height);
    const float x0 = clamp(cx + 0.5f - 0.5f * sw, 0.0f, (float)width - sw);
    const float y0 = clamp(cy + 0.5f - 0.5f * sh, 0.0f, (float)height - sh);
    return area_sum(integ, stride, width, height, x0, y0, x0 + sw, y0 + sh) / (sw * sh);
}

#if DESC_WG != 64
#error "descriptor: DESC_WG must be 64 (4 work-items per subregion of the 4x4 grid)"
#endif

__kernel __attribute__((reqd_work_group_size(DESC_WG, 1, 1)))
void descriptor(__global const uint* integ, const int width, const int height,
                __global float* keypoints, const int kp_stride, __global const float* gauss,
                const int extended)
{
    __local float patch[PATCH_PTS];
    __local float partial[DESC_WG][8];
    __local float vec[128];
    __local float scale;
    const int lid = get_local_id(0);
    const int key = get_group_id(0);
    const int length = extended ? 128 : 64;
    __global float* kp = keypoints + (size_t)key * kp_stride;
    const float s = kp[KP_SIZE] * 1.2f / 9.0f;
    const float cell = (float)(int)((PATCH_SZ + 1) * s) / (PATCH_SZ + 1);
    const float theta = kp[KP_ANGLE] * (M_PI_F / 180.0f);
    float cos_t;
    const float sin_t = sincos(theta, &cos_t);
    const size_t stride = (size_t)width + 1;

    for (int p = lid; p < PATCH_PTS; p += DESC_WG) {
        const float u = (p % (PATCH_SZ + 1) - PATCH_SZ / 2) * cell;  // along the angle
        const float v = (p / (PATCH_SZ + 1) - PATCH_SZ / 2) * cell;  // perpendicular to it
        patch[p] = cell_mean(integ, stride, width, height, kp[KP_X] + u * cos_t - v * sin_t,
                             kp[KP_Y] + u * sin_t + v * cos_t, cell);
    }
    barrier(CLK_LOCAL_MEM_FENCE);

    // Work-item -> subregion lid / 4 (4x4 grid), and every 4th of its 25 samples.
    const int region = lid / 4;
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int t = lid % 4; t < 25; t += 4) {
        const int i = (region / 4) * 5 + t / 5, j = (region % 4) * 5 + t % 5;
        const float w = gauss[i * PATCH_SZ + j];
        __local const float* row0 = patch + i * (PATCH_SZ + 1);
        __local const float* row1 = row0 + PATCH_SZ + 1;
        const float dx = (row0[j + 1] - row0[j] + row1[j + 1] - row1[j]) * w;
        const float dy = (row1[j] - row0[j] + row1[j + 1] - row0[j + 1]) * w;
        if (!extended) {
            acc[0] += dx; acc[1] += dy; acc[2] += fabs(dx); acc[3] += fabs(dy);
        } else {
            if (dy >= 0) { acc[0] += dx; acc[1] += fabs(dx); }
            else { acc[2] += dx; acc[3] += fabs(dx); }
            if (dx >= 0) { acc[4] += dy; acc[5] += fabs(dy); }
            else { acc[6] += dy; acc[7] += fabs(dy); }
        }
    }
    for (int c = 0; c < 8; ++c)
        partial[lid][c] = acc[c];
    barrier(CLK_LOCAL_MEM_FENCE);
    const int per_region = length / 16;
    for (int e = lid; e < length; e += DESC_WG) {
        const int r = e / per_region, c = e % per_region;
        vec[e] = partial[4 * r][c] + partial[4 * r + 1][c] + partial[4 * r + 2][c]
                 + partial[4 * r + 3][c];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid == 0) {
        float sq = 0.0f;
        for (int e = 0; e < length; ++e)
            sq += vec[e] * vec[e];
        scale = kp[KP_VALID] > 0.0f ? 1.0f / (sqrt(sq) + FLT_EPSILON) : 0.0f;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int e = lid; e < length; e += DESC_WG)
        kp[KP_FIELDS + e] = vec[e] * scale;
}
