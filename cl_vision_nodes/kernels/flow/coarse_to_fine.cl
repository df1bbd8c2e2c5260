// Flow between pyramid levels (flow/coarse_to_fine.py); after common.cl.

// Coarse-to-fine prolongation: fine pixel (x, y) lies at coarse (x/2, y/2) (see pyr_down);
// bilinear, and the vectors double with the pixel size.
__kernel void flow_upsample(__global const float2* coarse, const int cw, const int ch,
                            __global float2* fine, const int fw, const int fh)
{
    const int x = get_global_id(0), y = get_global_id(1);
    if (x >= fw || y >= fh)
        return;
    fine[(size_t)y * fw + x] = 2.0f * bilinear2(coarse, cw, ch, 0.5f * x, 0.5f * y);
}
