"""The pair engine: every all-pairs computation of the package, block by block.

The individual-fairness metrics look at all ``N(N-1)/2`` pairs of essays: 1.23
million for ASAP prompt 7 (N=1,569), 1.25 billion for 50,000 essays. The
paper's code built full ``N x N`` matrices with ``pdist`` + ``squareform``,
which needs tens of GB beyond ~20,000 essays. The engine walks the upper
triangle of the distance matrix in square blocks instead, and lets each metric
reduce every block to a small partial result (a count, a min/max, a histogram,
a top-k list) that is combined with the others. Memory is ``O(N * d +
block_size**2)`` per worker.

In the manner of scikit-learn's ``metrics/_pairwise_distances_reduction``,
one module per responsibility, each importing only from those above it in
this list (``tests/test_package_layout.py`` checks that no import forms a
cycle):

``_types``
    Type aliases, the block-size constants, argument checks and the
    arithmetic of condensed pair indices.
``_scaling``
    Scores and their normalisation (``|dy|`` and ``d`` to ``[0, 1]``).
``_blocks``
    :class:`~._blocks.PairBlock`, the reducer protocol, and how the blocks of
    a pass are cut into chunks and run on threads or joblib workers.
``_results``
    :class:`~._results.TableResult`, the base of the table-valued results.
``_distances``
    The distances themselves: the one cosine implementation (float64 unit
    rows and a BLAS product), precomputed matrices, scikit-learn metrics.
``_kernels``
    The numba kernel of the screened review pass (imported only with numba).
``_torch_backend``
    The torch backend: float32 products and screens on a torch device.
``_range``
    The reductions the engine runs itself: the exact and the float32-screened
    distance range, and whole-block collection.
``_range_int8``
    The distance range's candidates from exact int8 products (CPUs with
    int8 dot products), within a proven error bound.
``_engine``
    :class:`~._engine.PairwiseEngine`, which walks the upper triangle of the
    distance matrix in blocks and hands each to a reducer, and the public
    :func:`~._engine.condensed_distances`. One engine holds the essays and,
    once computed, their distance range: the metrics accept it as ``X`` so
    that several of them share that work.
``_reducers``, ``_keys``
    Reducers over blocks (histograms, top-k lists, neighbours), over float
    keys of distances, and selection of order statistics.
``_counters``
    The Lipschitz counters: exact, float32-screened, score-sorted.
``_bootstrap_pairs``
    The weighted Lipschitz counts of all essay-level bootstrap replicates
    (and several conditions) in one pass: a matrix product per block.
``_review_stats``
    The statistics shared by the review metrics' pass (critical constants).
``_bootstrap_quantiles``
    The empirical Lipschitz constants of all bootstrap replicates: the upper
    tail of critical constants gathered once, replicate weights cumulated.
``_review_fused``, ``_review_screened``, ``_review_pass``
    The one pass behind the review metrics (neighbours, violations, profile):
    the fused float64 pass, the float32-screened pass, and the choice
    between them.

Conventions shared by every pair metric
---------------------------------------
Pair order
    Pairs are ``(i, j)`` with ``i < j``, ordered row by row as
    :func:`scipy.spatial.distance.pdist` returns them ("condensed" order). Ties
    are always broken by this order (the lowest ``(i, j)`` first), so results
    are deterministic.

Cosine distance
    ``1 - u.v / (|u| |v|)``, clipped to ``[0, 2]`` as scipy does. It is
    computed as ``1 - u_hat . v_hat`` from float64 unit rows with a BLAS matrix
    product (for sparse input: a dense product over the frequent columns plus a
    sparse product over the rare ones). The values agree with ``pdist(X,
    "cosine")`` to about ``1e-15`` but not bit for bit, because the dot products
    are summed in another order. A count that compares distances with another
    quantity (such as the Lipschitz fraction) can therefore differ from one made
    on ``pdist`` values only for a pair whose two sides are equal to the last
    bit; pass ``pdist``'s own array with ``metric="precomputed"`` to reproduce a
    ``pdist``-based count exactly.

Duplicates
    Two parallel vectors (duplicate essays) have cosine distance 0, but the
    float computation returns rounding noise of about ``1e-16`` instead (scipy
    too), and min-max normalisation would blow that noise up when it is the
    whole range. Cosine distances below the rounding-error bound of the dot
    product (``8 * k * eps``, ``k`` the number of features, or the most
    non-zeros of a row for sparse input: about ``7e-13`` for 384 dimensions)
    are therefore set to exactly 0.

Zero vectors
    An essay with no in-vocabulary word (a TF-IDF row of zeros) or an empty
    essay has no direction, and scipy's cosine distance is NaN for it. Here the
    cosine distance between two zero vectors is ``0`` (two essays with nothing
    in them are identical to the representation) and between a zero vector and
    a non-zero one is ``1`` (nothing in common, as for orthogonal vectors).

Other metrics
    ``metric`` may also be ``"precomputed"`` (``X`` is then a condensed distance
    vector of length ``N(N-1)/2`` or a symmetric square matrix), any metric name
    of :func:`sklearn.metrics.pairwise_distances` (evaluated block by block), or
    a callable taking two 1-D rows and returning a float.

Parallelism and determinism
    The default block side depends on ``N`` only: 2048, or less when that
    gives fewer than 8 bands of rows (never below 512), so that ASAP-sized
    problems (1,569 essays: 10 blocks) have work to split. Blocks are grouped
    into chunks of a size that depends only on the blocks (at least 16 chunks
    when the blocks allow it); runs of chunks go to :class:`joblib.Parallel`
    (so the backend of :func:`joblib.parallel_config`, Dask included, spreads
    them), and partial results are folded within each chunk, then chunk by
    chunk, in a fixed order, on every path. Results are therefore bit-identical
    for every ``n_jobs`` and backend, float sums included. Neither the blocks
    nor the chunks depend on ``n_jobs``: if they did, float sums would be
    grouped differently for different ``n_jobs``. Without parallelism, problems
    whose distance blocks fit in 64 MB are computed once and reused across the
    passes of a metric; with ``n_jobs > 1`` (or a parallel backend) every pass
    goes to the workers.

Float32 screening
    On large dense inputs under the cosine distance, the Lipschitz count and
    the distance range first use a float32 matrix product (twice as fast) with
    a rigorous bound on its error: pairs it decides are decided, and the few it
    cannot are settled with exact float64 distances computed pair by pair, in
    the block that found them (no count keeps them, so none is capped: memory
    stays that of one block whatever ``N``).
    Exact values there come from per-pair dot products instead of the float64
    matrix product; both agree with ``pdist`` to about ``1e-15``.
"""
