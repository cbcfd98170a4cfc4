// AHC058 baseline (discoverygym initial program): greedy on level-0 machines.
// Each turn, among the level-0 machines we can afford, strengthen the one adding the most apples
// per turn per apple spent (A_j * B_0j / cost); do nothing when none is affordable.
// Always valid: exactly T lines, never spends more apples than it has.
#include <bits/stdc++.h>
using namespace std;

int main() {
    int n, L, T;
    long long K;
    if (!(cin >> n >> L >> T >> K)) return 0;
    vector<long long> A(n);
    for (auto &a : A) cin >> a;
    vector<vector<long long>> C(L, vector<long long>(n));
    for (auto &row : C)
        for (auto &c : row) cin >> c;
    vector<vector<long long>> B(L, vector<long long>(n, 1)), P(L, vector<long long>(n, 0));
    long long apples = K;
    for (int t = 0; t < T; t++) {
        int pick = -1;
        double best = 0;
        for (int j = 0; j < n; j++) {
            long long cost = C[0][j] * (P[0][j] + 1);
            if (cost > apples) continue;
            double gain = (double)A[j] * B[0][j] / (double)cost;
            if (gain > best) { best = gain; pick = j; }
        }
        if (pick >= 0) {
            apples -= C[0][pick] * (P[0][pick] + 1);
            P[0][pick]++;
            printf("0 %d\n", pick);
        } else {
            printf("-1\n");
        }
        for (int i = 0; i < L; i++)
            for (int j = 0; j < n; j++) {
                if (i == 0) apples += A[j] * B[0][j] * P[0][j];
                else B[i - 1][j] += B[i][j] * P[i][j];
            }
    }
    return 0;
}
