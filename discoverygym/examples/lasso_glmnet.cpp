// LassoPath-v0 initial program (discoverygym): a port, written from the published description, of
// glmnet's Gaussian lasso path (Friedman, Hastie & Tibshirani 2010, "Regularization paths for
// generalized linear models via coordinate descent", JSS 33(1), sections 2.2-2.6) with the
// sequential strong rules of Tibshirani et al. 2012 (JRSS-B 74(2), section 2.2).
//
// Problem, for every lambda of the path:  minimise (1/2n) ||y - X w||^2 + lambda ||w||_1
// (no intercept, no standardisation: the objective is on X and y as given).
//
// Plain C++17 (no Eigen: it compiles in about a second; Eigen 3 is available to candidates).
//
// Wire format. stdin: int32 n, p, n_lambda; float64 X (n x p, row-major), y (n), lambda (n_lambda).
// stdout: float64 coef_path (p x n_lambda, column-major: the p coefficients of lambda 0 first).
//
// Algorithm (one lambda at a time, warm-started from the previous solution):
//   * coordinate update (JSS eq. 5 with alpha = 1, unit weights):
//       w_j <- S(g_j + v_j w_j, lambda) / v_j,  g_j = x_j'r / n,  v_j = x_j'x_j / n,  S = soft threshold;
//   * covariance updates for p < 500 (JSS 2.2): the gradient g = X'y/n - (X'X/n) w is kept for all j;
//     the column X'x_k/n is computed once, when x_k first becomes non-zero; a change d of w_k costs
//     O(p) (g -= d * G[:,k]);
//   * naive updates for p >= 500: the residual r = y - X w is kept; an update costs O(n);
//   * sequential strong rule (Tibshirani et al. 2012): the working set holds the ever-active
//     variables and every j with |g_j(w_prev)| >= 2 lambda - lambda_prev;
//   * active-set cycling (JSS 2.6): one full pass over the working set, then passes over the
//     non-zero coefficients only until they converge, then another full pass, until a full pass
//     changes nothing (max_j v_j d_j^2 below the threshold);
//   * KKT check on the discarded variables (|g_j| <= lambda); violators join the working set
//     and the solve resumes;
//   * a duality-gap check (our addition, so that every lambda is solved to an objective error of
//     at most GAP_TOL): if the gap is larger, the threshold is lowered 100 times and the solve resumes.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

namespace {

constexpr double GAP_TOL = 1e-7;      // absolute duality gap accepted at every lambda (check: 1e-6)
constexpr double THRESH = 1e-8;       // first convergence threshold on max v_j d_j^2, relative to y'y/n
constexpr int MAX_PASSES = 200000;    // passes over a working set per lambda (a safeguard)

using Vec = std::vector<double>;

bool read_exact(void* out, size_t bytes) {
    char* p = static_cast<char*>(out);
    while (bytes > 0) {
        size_t got = std::fread(p, 1, bytes, stdin);
        if (got == 0) return false;
        p += got;
        bytes -= got;
    }
    return true;
}

inline double dot(const double* a, const double* b, int m) {
    double s = 0.0;
    for (int i = 0; i < m; ++i) s += a[i] * b[i];
    return s;
}

inline void axpy(double alpha, const double* x, double* y, int m) {
    for (int i = 0; i < m; ++i) y[i] += alpha * x[i];
}

inline double soft(double u, double t) {
    if (u > t) return u - t;
    if (u < -t) return u + t;
    return 0.0;
}

struct Path {
    int n, p;
    bool cov;          // covariance updates (p < 500) or naive updates
    Vec X;             // n x p, column-major: column j is X[j*n .. j*n+n)
    Vec y, v, c;       // v_j = x_j'x_j/n, c = X'y/n
    double yy;         // y'y/n
    Vec w, g, r;       // coefficients, gradient X'r/n, residual (naive mode)
    Vec G;             // covariance mode: G[k*p .. k*p+p) = X'x_k/n once k has been non-zero
    std::vector<char> have_col, ever, in_set;
    std::vector<int> set, active;

    const double* col(int j) const { return X.data() + static_cast<size_t>(j) * n; }

    Path(int n_, int p_, Vec X_, Vec y_)
        : n(n_), p(p_), cov(p_ < 500), X(std::move(X_)), y(std::move(y_)) {
        v.resize(p);
        c.resize(p);
        for (int j = 0; j < p; ++j) {
            v[j] = dot(col(j), col(j), n) / n;
            c[j] = dot(col(j), y.data(), n) / n;
        }
        yy = dot(y.data(), y.data(), n) / n;
        w.assign(p, 0.0);
        g = c;
        if (cov) {
            G.assign(static_cast<size_t>(p) * p, 0.0);
            have_col.assign(p, 0);
        } else {
            r = y;
        }
        ever.assign(p, 0);
        in_set.assign(p, 0);
    }

    void full_gradient() {  // naive mode: g = X'r/n
        for (int j = 0; j < p; ++j) g[j] = dot(col(j), r.data(), n) / n;
    }

    // One coordinate update of w_j at lambda; returns v_j d^2 (0 when w_j did not change).
    double update(int j, double lam) {
        if (v[j] <= 0.0) return 0.0;  // an all-zero column keeps w_j = 0
        double gj = cov ? g[j] : dot(col(j), r.data(), n) / n;
        double wn = soft(gj + v[j] * w[j], lam) / v[j];
        double d = wn - w[j];
        if (d == 0.0) return 0.0;
        if (cov) {
            double* gc = G.data() + static_cast<size_t>(j) * p;
            if (!have_col[j]) {
                for (int k = 0; k < p; ++k) gc[k] = dot(col(k), col(j), n) / n;
                have_col[j] = 1;
            }
            axpy(-d, gc, g.data(), p);
        } else {
            axpy(-d, col(j), r.data(), n);
        }
        w[j] = wn;
        if (!ever[j]) {
            ever[j] = 1;
            active.push_back(j);
        }
        return v[j] * d * d;
    }

    double pass(const std::vector<int>& idx, double lam) {
        double dlx = 0.0;
        for (int j : idx) dlx = std::max(dlx, update(j, lam));
        return dlx;
    }

    // Coordinate descent on the working set with active-set cycling (JSS section 2.6).
    void solve_set(double lam, double thr) {
        for (int outer = 0; outer < MAX_PASSES; ++outer) {
            if (pass(set, lam) < thr) return;
            for (int inner = 0; inner < MAX_PASSES; ++inner)
                if (pass(active, lam) < thr) break;
        }
    }

    // Exact gradient (and residual) at w, removing the drift of the incremental updates.
    void refresh() {
        if (cov) {
            g = c;
            for (int k : active)
                if (w[k] != 0.0) axpy(-w[k], G.data() + static_cast<size_t>(k) * p, g.data(), p);
        } else {
            r = y;
            for (int k : active)
                if (w[k] != 0.0) axpy(-w[k], col(k), r.data(), n);
            full_gradient();
        }
    }

    // Duality gap of the current w at lam (Lasso dual with the scaled residual as dual point).
    double gap(double lam) const {
        double l1 = 0.0, wc = 0.0, wg = 0.0, gmax = 0.0;
        for (int j = 0; j < p; ++j) {
            l1 += std::abs(w[j]);
            wc += w[j] * c[j];
            wg += w[j] * g[j];
            gmax = std::max(gmax, std::abs(g[j]));
        }
        double rr, yr;
        if (cov) {
            rr = yy - wc - wg;   // ||r||^2/n = y'y/n - 2 w'c + w'Gw and Gw = c - g
            yr = yy - wc;
        } else {
            rr = dot(r.data(), r.data(), n) / n;
            yr = dot(y.data(), r.data(), n) / n;
        }
        double s = gmax > lam ? lam / gmax : 1.0;
        double primal = 0.5 * rr + lam * l1;
        double dual = s * yr - 0.5 * s * s * rr;
        return primal - dual;
    }

    void solve(double lam, double lam_prev) {
        // sequential strong rule on the gradient at the previous solution
        set.clear();
        std::fill(in_set.begin(), in_set.end(), 0);
        double cut = 2.0 * lam - lam_prev;
        for (int j = 0; j < p; ++j)
            if (ever[j] || std::abs(g[j]) >= cut) {
                set.push_back(j);
                in_set[j] = 1;
            }
        double thr = THRESH * yy;
        for (int round = 0; round < 12; ++round) {
            for (;;) {
                solve_set(lam, thr);
                if (!cov) full_gradient();  // the discarded variables' gradients
                bool added = false;
                for (int j = 0; j < p; ++j)
                    if (!in_set[j] && std::abs(g[j]) > lam) {  // KKT violated: back into the set
                        set.push_back(j);
                        in_set[j] = 1;
                        added = true;
                    }
                if (!added) break;
            }
            refresh();
            if (gap(lam) <= GAP_TOL) return;
            thr *= 1e-2;
        }
    }
};

}  // namespace

int main() {
    std::int32_t head[3];
    if (!read_exact(head, sizeof head)) return 1;
    const int n = head[0], p = head[1], L = head[2];
    if (n < 1 || p < 1 || L < 1) return 1;
    Vec xr(static_cast<size_t>(n) * p), yv(n), lam(L);
    if (!read_exact(xr.data(), xr.size() * sizeof(double)) || !read_exact(yv.data(), n * sizeof(double)) ||
        !read_exact(lam.data(), L * sizeof(double)))
        return 1;
    Vec xc(xr.size());  // row-major input -> column-major
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < p; ++j) xc[static_cast<size_t>(j) * n + i] = xr[static_cast<size_t>(i) * p + j];
    Vec().swap(xr);
    Path path(n, p, std::move(xc), std::move(yv));
    Vec coef(static_cast<size_t>(p) * L);
    double lam_prev = 0.0;
    for (double cj : path.c) lam_prev = std::max(lam_prev, std::abs(cj));
    for (int k = 0; k < L; ++k) {
        path.solve(lam[k], std::max(lam_prev, lam[k]));
        std::copy(path.w.begin(), path.w.end(), coef.begin() + static_cast<size_t>(k) * p);
        lam_prev = lam[k];
    }
    std::fwrite(coef.data(), sizeof(double), coef.size(), stdout);
    return 0;
}
