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

// Stage "delaunay" (elas/triangulation.py): every point computes its own star (gift wrapping
// with exact integer predicates).
//
// The Delaunay triangulation of lattice points is not unique (co-circular squares). Ties are
// broken by Simulation of Simplicity: the lifted coordinate x^2 + y^2 of point i is raised by
// eps^(i+1) (i = libelas point order), which defines one triangulation that every point computes
// identically. A triangle is stored by the vertex opposite its longest edge (its largest angle,
// >= 60 degrees, so a point stores at most 5 triangles); ties go to the lowest slot.
//
// Exactness: orientation and in-circle tests are evaluated in long. Coordinates are view
// positions, x in [-disp_max, W - 1 + disp_max] and y in [0, H - 1], so coordinate differences
// stay below D = max(W + 2 disp_max, H); both determinants are bounded by 12 D^4, below 2^63
// for D <= 29,600 (ElasMatcher refuses larger images). Everything computed in float is a scan
// bound (which rows and columns might hold a point inside a circle or left of an edge), widened
// by slack() beyond its rounding errors; the decisions are the exact predicates.
#ifndef MAX_OWNED
#error MAX_OWNED (triangles stored per point) comes from the host: elas/device.py
#endif

// A float scan bound with operands of about this magnitude is off by a few roundings of 2^-24
// (2.5 ulp for a division): widening it by one pixel plus 2^-12 of the magnitude covers them.
inline float slack(float magnitude) { return 1.0f + magnitude * 0x1p-12f; }

// floor(x) as int, clamped to +-1e9 first (bounds far outside the image).
inline int ifloor(float x)
{
    x = x < -1e9f ? -1e9f : (x > 1e9f ? 1e9f : x);
    const int i = (int)x;
    return (float)i > x ? i - 1 : i;
}

inline long orient2(int2 a, int2 b, int2 c)
{
    return (long)(b.x - a.x) * (long)(c.y - a.y) - (long)(b.y - a.y) * (long)(c.x - a.x);
}

inline long incircle_det(int2 a, int2 b, int2 c, int2 d)
{
    const long adx = a.x - d.x, ady = a.y - d.y;
    const long bdx = b.x - d.x, bdy = b.y - d.y;
    const long cdx = c.x - d.x, cdy = c.y - d.y;
    const long ad = adx * adx + ady * ady, bd = bdx * bdx + bdy * bdy, cd = cdx * cdx + cdy * cdy;
    return adx * (bdy * cd - bd * cdy) - ady * (bdx * cd - bd * cdx) + ad * (bdx * cdy - bdy * cdx);
}

// Is d inside the circle through a, b, c (counter-clockwise, orient2 > 0) after perturbation?
inline bool inside_circle(int2 a, int2 b, int2 c, int2 d, int ra, int rb, int rc, int rd)
{
    const long det = incircle_det(a, b, c, d);
    if (det != 0)
        return det > 0;
    // det' = det + e_a*orient(b,c,d) + e_b*orient(c,a,d) + e_c*orient(a,b,d) - e_d*orient(a,b,c):
    // the term of the lowest rank decides
    long coef[4] = {orient2(b, c, d), orient2(c, a, d), orient2(a, b, d), -orient2(a, b, c)};
    int rank[4] = {ra, rb, rc, rd};
    for (int pass = 0; pass < 4; ++pass) {
        int k = -1;
        for (int j = 0; j < 4; ++j)
            if (rank[j] >= 0 && (k < 0 || rank[j] < rank[k]))
                k = j;
        if (coef[k] != 0)
            return coef[k] > 0;
        rank[k] = -1;
    }
    return false;
}

// The circles through a and b: the current best apex c and the in-circle determinant of c as a
// linear form in (x, y, x^2 + y^2) relative to a, so that testing a candidate costs five
// products: incircle_det(a, b, c, s) = -(k.x sx + k.y sy + k.z (sx^2 + sy^2)).
typedef struct {
    int2 a, b, c;
    int ra, rb, rc;
    long3 k;
} Pencil;

inline void pencil_set(Pencil* p, int2 c, int rc)
{
    const long bx = p->b.x - p->a.x, by = p->b.y - p->a.y;
    const long cx = c.x - p->a.x, cy = c.y - p->a.y;
    const long bz = bx * bx + by * by, cz = cx * cx + cy * cy;
    p->c = c;
    p->rc = rc;
    p->k = (long3)(by * cz - bz * cy, bz * cx - bx * cz, bx * cy - by * cx);
}

// Is s (left of a -> b) inside the current circle, ties broken as inside_circle does?
inline bool pencil_inside(const Pencil* p, int2 s, int rs)
{
    const long sx = s.x - p->a.x, sy = s.y - p->a.y;
    const long det = -(p->k.x * sx + p->k.y * sy + p->k.z * (sx * sx + sy * sy));
    if (det != 0)
        return det > 0;
    return inside_circle(p->a, p->b, p->c, s, p->ra, p->rb, p->rc, rs);
}

typedef struct {
    __global const int4* slots;
    __global const int* row_start;
    __global const int* row_len;
    __global const int* row_y;
    int rows;
} RowTable;

// First slot of row r whose x is >= x.
inline int row_lower_bound(const RowTable* t, int r, int x)
{
    int lo = t->row_start[r], hi = lo + t->row_len[r];
    while (lo < hi) {
        const int mid = (lo + hi) >> 1;
        if (t->slots[mid].x < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

// First row whose y is >= y.
inline int first_row_from(const RowTable* t, float y)
{
    int lo = 0, hi = t->rows;
    while (lo < hi) {
        const int mid = (lo + hi) >> 1;
        if ((float)t->row_y[mid] < y)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

// A disc that contains the circumcircle of a, b, c (c strictly left of a -> b) with at least
// one pixel to spare. The centre offset from a is a quotient of exact long determinants, so its
// float error is a few roundings of its own size, the radius.
typedef struct {
    float cx, cy, rad;
} Circle;

inline Circle circumcircle(int2 a, int2 b, int2 c)
{
    const long bx = b.x - a.x, by = b.y - a.y, cx = c.x - a.x, cy = c.y - a.y;
    const long b2 = bx * bx + by * by, c2 = cx * cx + cy * cy;
    const float d = (float)(2 * (bx * cy - by * cx));  // > 0: c is left of a -> b
    const float ux = (float)(cy * b2 - by * c2) / d, uy = (float)(bx * c2 - cx * b2) / d;
    const float r = sqrt(ux * ux + uy * uy);
    const float ax = (float)a.x, ay = (float)a.y;
    Circle k = {ax + ux, ay + uy, r + slack(r + fabs_op(ax) + fabs_op(ay))};
    return k;
}

// Clip [*lo, *hi] to the part of the row dy below the disc's centre that the disc covers (with
// slack for the rounding of cx +- h); false if the row misses the disc. The disc's radius has a
// margin of 2^-12 r + 1 over the true circle, so its squared half-width exceeds the true one by
// far more than the roundings of rad^2 - dy^2.
inline bool circle_span(Circle k, float dy, float* lo, float* hi)
{
    if (fabs_op(dy) > k.rad)
        return false;
    const float h2 = k.rad * k.rad - dy * dy;
    const float h = sqrt(h2 > 0.0f ? h2 : 0.0f);
    const float m = slack(fabs_op(k.cx) + h);
    *lo = k.cx - h - m;
    *hi = k.cx + h + m;
    return true;
}

// Replace *best by s if s lies left of a->b and inside the current best circle.
inline bool improve(const RowTable* t, int sa, int sb, int s, int* best, Pencil* p)
{
    if (s == sa || s == sb || s == *best)
        return false;
    const int4 rec = t->slots[s];
    if (orient2(p->a, p->b, rec.xy) <= 0)
        return false;
    if (*best >= 0 && !pencil_inside(p, rec.xy, rec.z))
        return false;
    *best = s;
    pencil_set(p, rec.xy, rec.z);
    return true;
}

// Clip [*lo, *hi] to the part of row y left of a -> b (orient2 > 0), widened by slack()
// (improve() decides exactly); false if nothing is left.
inline bool left_span(int2 A, int2 B, int y, float* lo, float* hi)
{
    const long ex = B.x - A.x, ey = B.y - A.y;
    const long rhs = ex * (long)(y - A.y);  // orient2 = rhs - ey * (x - A.x)
    if (ey == 0)
        return rhs > 0;
    const float run = (float)rhs / (float)ey;  // x_t - A.x
    const float x_t = (float)A.x + run;
    const float m = slack(fabs_op(run) + fabs_op((float)A.x));
    if (ey > 0)
        *hi = x_t + m < *hi ? x_t + m : *hi;
    else
        *lo = x_t - m > *lo ? x_t - m : *lo;
    return *lo <= *hi;
}

// Offer the slots of row r with x in [lo, hi] (at most `limit` of them) to improve().
inline void offer_row(const RowTable* t, int r, float lo, float hi, int limit, int sa, int sb,
                      int* best, Pencil* p)
{
    const int end = t->row_start[r] + t->row_len[r];
    const int first = row_lower_bound(t, r, ifloor(lo));
    for (int s = first; s < end && s < first + limit && (float)t->slots[s].x <= hi; ++s)
        improve(t, sa, sb, s, best, p);
}

// The Delaunay apex of the directed edge sa -> sb (on its left), or -1 on the convex hull.
inline int apex(const RowTable* t, int sa, int sb)
{
    const int4 ra4 = t->slots[sa], rb4 = t->slots[sb];
    const int2 A = ra4.xy, B = rb4.xy;
    int best = -1;
    Pencil p;
    p.a = A;
    p.b = B;
    p.ra = ra4.z;
    p.rb = rb4.z;
    // a first candidate: in the rows around the edge, the left slots nearest to its bisector
    const float mx = 0.5f * (float)(A.x + B.x), my = 0.5f * (float)(A.y + B.y);
    const int ex = B.x - A.x, ey = B.y - A.y;
    for (int r = imax(imin(ra4.w, rb4.w) - 1, 0); r <= imin(imax(ra4.w, rb4.w) + 1, t->rows - 1);
         ++r) {
        const int y = t->row_y[r];
        const float target = ex != 0 ? mx - ((float)y - my) * (float)ey / (float)ex : (float)A.x;
        float lo = target - 2.0f * iabs(ex) - 2.0f * iabs(ey) - 1.0f, hi = 2.0f * target - lo;
        if (left_span(A, B, y, &lo, &hi))
            offer_row(t, r, lo, hi, 3, sa, sb, &best, &p);
    }
    if (best < 0) {
        // any point left of the line: the row ends are the extreme points of each row
        for (int r = 0; r < t->rows; ++r) {
            const int n = t->row_len[r];
            if (n == 0)
                continue;
            const int first = t->row_start[r];
            improve(t, sa, sb, first, &best, &p);
            improve(t, sa, sb, first + n - 1, &best, &p);
        }
        if (best < 0)
            return -1;
    }
    // exact check of the circle; every improvement shrinks its part left of the edge, so one
    // sweep over the rows of the first circle, with ranges updated on the way, is enough
    Circle k = circumcircle(A, B, p.c);
    for (int r = first_row_from(t, k.cy - k.rad); r < t->rows; ++r) {
        const int y = t->row_y[r];
        if ((float)y > k.cy + k.rad)
            break;
        float lo, hi;
        if (!circle_span(k, (float)y - k.cy, &lo, &hi) || !left_span(A, B, y, &lo, &hi))
            continue;
        const int end = t->row_start[r] + t->row_len[r];
        for (int s = row_lower_bound(t, r, ifloor(lo)); s < end; ++s) {
            if ((float)t->slots[s].x > hi)
                break;
            if (improve(t, sa, sb, s, &best, &p)) {
                k = circumcircle(A, B, p.c);
                float lo2, hi2;  // the new circle passes through s, so it covers row y
                if (circle_span(k, (float)y - k.cy, &lo2, &hi2))
                    hi = hi2 < hi ? hi2 : hi;
            }
        }
    }
    return best;
}

inline int nearest_slot(const RowTable* t, int s)
{
    const int4 p = t->slots[s];
    long best_d = LONG_MAX;
    int best = -1;
    for (int dir = -1; dir <= 1; dir += 2) {
        for (int r = dir < 0 ? p.w : p.w + 1; r >= 0 && r < t->rows; r += dir) {
            const long dy = t->row_y[r] - p.y;
            if (dy * dy > best_d)
                break;
            const int pos = row_lower_bound(t, r, p.x);
            const int lo = imax(pos - 1, t->row_start[r]);
            const int hi = imin(pos + 2, t->row_start[r] + t->row_len[r]);
            for (int q = lo; q < hi; ++q) {
                if (q == s)
                    continue;
                const long dist = sq_dist(p.xy, t->slots[q].xy);
                if (dist < best_d || (dist == best_d && q < best)) {
                    best_d = dist;
                    best = q;
                }
            }
        }
    }
    return best;
}

// Owner of triangle (a, b, c): the vertex opposite the longest edge, lowest slot on ties.
inline int triangle_owner(const RowTable* t, int a, int b, int c)
{
    const int2 A = t->slots[a].xy, B = t->slots[b].xy, C = t->slots[c].xy;
    const long la = sq_dist(B, C), lb = sq_dist(C, A), lc = sq_dist(A, B);
    const long m = la > lb ? (la > lc ? la : lc) : (lb > lc ? lb : lc);
    int owner = INT_MAX;
    if (la == m)
        owner = a;
    if (lb == m && b < owner)
        owner = b;
    if (lc == m && c < owner)
        owner = c;
    return owner;
}

inline void emit(const RowTable* t, int s, int a, int b, int c, __global int4* tri, int* n)
{
    if (triangle_owner(t, a, b, c) != s || *n >= MAX_OWNED)
        return;
    tri[s * MAX_OWNED + *n] = (int4)(t->slots[a].z, t->slots[b].z, t->slots[c].z, 0);
    ++*n;
}

// Both views in one launch (dimension 1 = view), for twice the parallelism of one view.
__kernel void elas_triangulate(__global const int4* slots_l, __global const int4* slots_r,
                               __global const int* row_start, __global const int* row_len_l,
                               __global const int* row_len_r, __global const int* row_y,
                               const int rows, __global const int* meta, const int max_slots,
                               __global int4* tri_l, __global int4* tri_r,
                               __global int* tri_count_l, __global int* tri_count_r)
{
    const int s = get_global_id(0);
    const int right = get_global_id(1);
    if (s >= max_slots || right > 1)
        return;
    __global const int4* slots = right ? slots_r : slots_l;
    __global int4* tri = right ? tri_r : tri_l;
    int n = 0;
    const RowTable t = {slots, row_start, right ? row_len_r : row_len_l, row_y, rows};
    if (s < meta[1] && slots[s].z >= 0) {
        const int q0 = nearest_slot(&t, s);
        if (q0 >= 0) {
            const int limit = meta[1];
            int q = q0;
            bool closed = false;
            for (int it = 0; it < limit; ++it) {  // counter-clockwise around s
                const int r = apex(&t, s, q);
                if (r < 0)
                    break;
                emit(&t, s, s, q, r, tri, &n);
                q = r;
                if (q == q0) {
                    closed = true;
                    break;
                }
            }
            q = q0;
            for (int it = 0; it < limit && !closed; ++it) {  // clockwise from q0 to the hull
                const int r = apex(&t, q, s);
                if (r < 0)
                    break;
                emit(&t, s, s, r, q, tri, &n);
                q = r;
            }
        }
    }
    (right ? tri_count_r : tri_count_l)[s] = n;
}
