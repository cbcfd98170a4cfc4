// AHC039 baseline (discoverygym initial program): the best axis-parallel rectangle on a coarse grid.
// Counts (mackerels - sardines) in G x G cells and picks the cell rectangle with the largest sum
// (2D maximum subarray), then prints its four corners. Always valid: 4 vertices, perimeter <= 4e5.
#include <bits/stdc++.h>
using namespace std;

int main() {
    const int D = 100000, G = 25, W = D / G;  // cell width 4000
    int n;
    if (!(cin >> n)) return 0;
    vector<vector<long long>> cell(G, vector<long long>(G, 0));
    for (int i = 0; i < 2 * n; i++) {
        int x, y;
        cin >> x >> y;
        int cx = min(x / W, G - 1), cy = min(y / W, G - 1);
        cell[cx][cy] += (i < n) ? 1 : -1;
    }
    long long best = LLONG_MIN;
    int bx0 = 0, bx1 = 0, by0 = 0, by1 = 0;
    for (int x0 = 0; x0 < G; x0++) {
        vector<long long> col(G, 0);
        for (int x1 = x0; x1 < G; x1++) {
            for (int y = 0; y < G; y++) col[y] += cell[x1][y];
            long long run = 0;
            int start = 0;
            for (int y = 0; y < G; y++) {  // Kadane over rows
                if (run <= 0) { run = 0; start = y; }
                run += col[y];
                if (run > best) { best = run; bx0 = x0; bx1 = x1; by0 = start; by1 = y; }
            }
        }
    }
    int xa = bx0 * W, xb = min(D, (bx1 + 1) * W), ya = by0 * W, yb = min(D, (by1 + 1) * W);
    printf("4\n%d %d\n%d %d\n%d %d\n%d %d\n", xa, ya, xb, ya, xb, yb, xa, yb);
    return 0;
}
