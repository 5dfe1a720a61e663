"""Mutants judged equivalent: no valid input makes the product give another verdict (any row's
outcome, or an exit code).

Each entry is a mutant id (``audit.mutants.make_id``: file, line, operator, patch hash) and one
line saying why, judged by reading the code (docs/AUDIT.md: how).  The kill ratio excludes them.
An entry that the current source no longer generates is reported as stale; an entry that the
parts *do* detect is reported as a wrong judgement — neither is silently ignored."""

from __future__ import annotations

_BITVEC_MOD = ("z3.BitVecVal(v, 64) takes v modulo 2^64, and (2^65 - 1), (2^65 - 1) and -1 are all "
               "2^64 - 1 modulo 2^64: the same all-ones mask")
_EXPORT_ONLY = ("the SMT-LIB logic is only written into files `prove --smt2` exports (proofs.smt2); the "
                "solver run by prove never reads it")
_PREFER = "Goal.prefer only shapes a counterexample (small ids, plain floats); it never takes part in a verdict"

_BATCH_DIGEST = ("which of two computations of one digest Rendered.digest takes: the batch's BatchContentIds "
                 "slice or content_id_of on the render's own tensors hash the same bytes under the same header "
                 "(tests/test_realstate_batch_ids.py); the guard only keeps a render whose tensors were replaced "
                 "off the batch's bytes, and no product caller replaces them")
_DISPLAY = ("only what a row prints or its JSON details (a figure, a count's key name, a default seconds "
            "value, rounding of seconds): no outcome and no exit code reads it")
_ONLY_SELECTION = ("spec.registered with a claim id, or across parts, is read only by `canonmerge claims` (display) "
                   "and by --only (filtered again by each part's own check table): prove, check and realstate run "
                   "the same checks with the same verdicts")
_ONE_DEVICE = ("the gather-on-one-device step: with every fragment on the CPU, the inverted test moves tensors to "
               "the device they are already on, a no-op (a CUDA machine is needed to tell)")

_BLOCKS = ("exact_order_value's block size (BLOCK_ELEMENTS, block_rows): the sums are exact row by row, "
           "so how many rows share a block changes the work, not a bit of m")
_PATH_CHOICE = ("a threshold that picks which exact path computes a sum (finish a block now or gather its rows; "
                "math.fsum or the vectorized total; gather remainders or not): every path is exact, so m has "
                "the same bits; verify runs both sides of each (realstate.kernel.order_value.PATH_PROBES)")
_COPY = ("scratch_is_input: whether the exact sum may overwrite its input or works on a copy; no caller reads "
         "the input afterwards, so the sums are the same")
_UNREACHED_BOUND = ("a safety bound no input reaches (rows of 2^40 values, 4200 extraction levels): a larger or "
                    "equal bound changes nothing")

_PESSIMISTIC = ("a change to the storage-format table that only makes the plain-sum exactness test more "
                "pessimistic (a smaller exponent read, more mantissa bits assumed, or float32 tested too): more "
                "rows take the exact path, and that path gives the same bits")

_PROBES = ("a PATH_PROBES setting: probes only choose which exact path computes m (how many rows share a block, "
           "where the vectorized norm total starts), and every path gives the same bits, so another value cannot "
           "change m; it changes which path verify's few vectors drive")
_UNREAD_F32 = ("float32's exponent fields in the plain-sum table: float32 keys never take the plain-sum test "
               "(check_plain_sums=False), so these fields are never read")
_WIDER_SIGMA = ("a larger spread M in the extraction's sigma = 2^(e+M): a larger sigma only coarsens the level's grid "
                "(the q still sum exactly, the remainders shrink by at least 2^(52-M) per level), so the exact "
                "sum and its one rounding are the same; 2,000 adversarial rows (audit3 ovdiff) agree")
_CHUNK_SIZE = ("realstate.kernel.rope.CHUNK_ELEMENTS: where a render leaves the small path for the chunked one and how many "
               "elements a chunk holds; both paths are the literal formula term for term (verify renders through "
               "both, engine.chunked), so another size changes the work, not a byte")
_RENDER_PATH = ("a threshold that picks the small or the chunked render path (or ignores the chunk_elements override): "
                "both paths are the literal formula term for term and verify checks each against the oracle, so "
                "the bytes are the same whichever path a render takes")
_KERNEL_PATH = ("a choice between realstate.kernel.fused's compiled kernel and torch's operations for a large render (numba "
                "found, the device, the engine's fused flag or its default): both write the literal formula's bits, "
                "and realstate's oracle row renders through each on its own engine, so another choice changes the "
                "work, not a byte")
_KERNEL_THREADS = ("the threads the compiled kernel splits a render's (layer, head) blocks between: every block is "
                   "computed the same way by whichever thread writes it (a thread given no block, a bound no thread "
                   "reads, or two threads writing the same bytes change nothing)")
_KERNEL_COMPILE = ("numba's options for the compiled kernel: without nogil its threads take turns, without the disk "
                   "cache each process compiles it afresh; the same machine code either way, and the same bytes")
_HALF_TEST = ("realstate.kernel.fused._hardware_half, whether float16 keys take the kernel: on this host (F16C) every variant "
              "either keeps them on the kernel or sends them to torch's path, the same bytes; on a CPU without F16C, "
              "enabling the kernel could leave numba's JIT without the helper routines LLVM calls for half precision "
              "(a failure to compile, never other bytes), which no host here can show")
_GROUPING = ("_write_spans' grouping of back-to-back moved pieces: in a render the pieces always lie back to back, "
             "so the changed test only splits a run into smaller groups (each rotated alone, the same bytes) or "
             "keeps grouping pieces that are adjacent anyway")
_CHUNK_SHAPE = ("_rotate_run's chunk shape (how many layer-head blocks and positions one float32 scratch holds, and "
                "how large that scratch is): each chunk is rotated by the same formula from the sources, so another "
                "shape or a larger scratch changes the work, not a byte")
_TABLE_CACHE = ("_CACHED_TABLE_ELEMENTS: the size up to which rotation tables are cached; a cached table and a rebuilt "
                "one hold the same values")
_BATCH_SIZE = ("realstate.kernel.render.BATCH_ELEMENTS, the engine's batch_elements that overrides it, and the size test "
               "that reads the bound: which renders of a "
               "canonical_renders call share one batch of torch calls and which are written alone; a render holds "
               "the same bytes either way (verify compares renders written together with the oracle), so another "
               "bound changes the work, not a byte; tests/test_realstate_fragment_render.py pins where the bound is")
_MASK_LOW_BIT = ("the exponent mask with the lowest mantissa bit added: that bit lies below the exponent field, and "
                 "the shift that follows drops it, so the field read is the same")

_VALIDATION = "input validation: only invalid input reaches it, which verify never builds"
_DIGEST_FIGURE = ("the start value of the 'max digests per set' figure: the row prints it, Check.tally decides from "
                  "checked and found, and any set with a schedule has at least one digest")
_BATCH_ONLY = ("how many C3 renders go to the backend together (RENDER_BATCH): each render is compared on its own, so "
               "another batch size changes the work, not a digest")
_CELL_LABEL = ("the label of a bench cell that fails a structural row: built only for a failing cell (where the "
               "mutant raises instead of reporting, never a pass); the correct product has none")

EQUIVALENT: dict[str, str] = {
    "realstate/kernel/rope.py:314:operator_remove_unary_ops:ba006eb1":
        "_store_rounded's device test only decides whether the NaN test is asked before the canonical-NaN "
        "fill: a float32 sum is NaN whenever one of its terms is, so the fill still runs wherever a NaN "
        "is, on every device, and writes the same bits",
    "realstate/kernel/fused.py:193:operator_keywords:c84a718d": _HALF_TEST,
    "realstate/kernel/fused.py:193:operator_name:f125f303": _HALF_TEST,
    "realstate/kernel/fused.py:193:operator_swap_op:2d1bb49b": _HALF_TEST,
    "realstate/kernel/fused.py:193:operator_swap_op:939a72bb": _HALF_TEST,
    "realstate/kernel/fused.py:193:operator_swap_op:f9ad63a0": _HALF_TEST,
    "realstate/kernel/fused.py:197:operator_name:d2fa31b0": "the float32 kernel's IEEE-half flag, which it never reads",
    "realstate/kernel/fused.py:199:operator_name:8ed9fe87": "the float32 row kernel's IEEE-half flag, which it never reads",
    "realstate/kernel/fused.py:208:operator_keywords:8ed86946": _KERNEL_PATH + " (every float dtype has a kernel here, so "
                                                          "the inverted test sends them all to torch's path)",
    "realstate/kernel/fused.py:208:operator_swap_op:8110d4a2": _KERNEL_PATH + " (realstate.kernel.rope.fused_kernel returns None "
                                                         "for a tensor off the CPU before it asks applies)",
    "realstate/kernel/engine.py:44:operator_name:8963f59e": _KERNEL_PATH,
    "realstate/kernel/engine.py:82:operator_name:5796ce3f": _KERNEL_PATH + " (the torch engines then take the kernel too)",
    "realstate/kernel/fused.py:101:operator_name:cbc94ee1": _KERNEL_COMPILE,
    "realstate/kernel/fused.py:101:operator_name:d2fa8e43": _KERNEL_COMPILE,
    "realstate/kernel/fused.py:103:operator_name:92fc4987": _KERNEL_COMPILE,
    "realstate/kernel/fused.py:233:operator_if_exp:dda0d475": _KERNEL_THREADS,
    "realstate/kernel/fused.py:233:operator_number:54afc918": _KERNEL_THREADS,
    "realstate/kernel/fused.py:234:operator_number:56b7ae09": _KERNEL_THREADS,
    "realstate/kernel/rope.py:48:operator_keywords:7ef2f4e3": _KERNEL_PATH,
    "realstate/kernel/rope.py:170:operator_name:2010b7d1": _KERNEL_PATH,
    "realstate/kernel/rope.py:209:operator_name:e876d23c": _KERNEL_PATH,
    "realstate/kernel/rope.py:247:operator_if_exp:3ea518a9": _KERNEL_PATH,
    "realstate/kernel/rope.py:247:operator_if_exp:681a0cdc": _KERNEL_PATH,
    "realstate/kernel/rope.py:269:operator_remove_unary_ops:81d471d4": _KERNEL_PATH,
    "realstate/kernel/rope.py:269:operator_swap_op:25309151": _KERNEL_PATH + " (with numba, a CUDA tensor is still refused by "
                                                       "realstate.kernel.fused.applies)",
    "realstate/kernel/rope.py:272:operator_if_exp:36efa2b4": _KERNEL_PATH,
    "realstate/kernel/render.py:89:operator_number:23022ce0": _BATCH_SIZE,
    "realstate/kernel/render.py:89:operator_number:8d39cd7d": _BATCH_SIZE,
    "realstate/kernel/render.py:89:operator_swap_op:1e6f094d": _BATCH_SIZE,
    "realstate/kernel/render.py:187:operator_if_exp:17cbf727": _BATCH_SIZE,
    "realstate/kernel/render.py:190:operator_swap_op:29ae1fbe": _BATCH_SIZE,
    "realstate/kernel/render.py:190:operator_swap_op:676321b2": _BATCH_SIZE,
    "realstate/kernel/render.py:190:operator_swap_op:b055ccb9": _BATCH_SIZE,
    "realstate/kernel/render.py:190:operator_swap_op:d0ecc40c": _BATCH_SIZE,
    "realstate/kernel/render.py:62:operator_keywords:e43ded62": _BATCH_DIGEST,
    "realstate/kernel/render.py:62:operator_keywords:58b912a1": _BATCH_DIGEST,
    "realstate/kernel/render.py:62:operator_number:330f0bad": _BATCH_DIGEST,
    "realstate/kernel/render.py:62:operator_swap_op:79579e3d": _BATCH_DIGEST,
    "realstate/kernel/rope.py:344:operator_swap_op:f8be3c19":
        "_rotate_run also copying a piece's empty overlap with a chunk (lo == hi): an empty copy writes nothing",
    "realstate/kernel/rope.py:330:operator_swap_op:9d49a17f": _CHUNK_SHAPE,
    "realstate/kernel/rope.py:331:operator_swap_op:6911331f":
        _CHUNK_SHAPE + " (chunk // (length / D) >= D^2 exceeds layers x kv heads in every geometry here, so min() "
        "still returns the integer block count)",
    "realstate/kernel/rope.py:333:operator_number:22090cfb": _CHUNK_SHAPE,
    "realstate/kernel/rope.py:333:operator_number:94986d77": _CHUNK_SHAPE,
    "realstate/kernel/rope.py:334:operator_number:d3d1f301": _CHUNK_SHAPE,
    "realstate/kernel/rope.py:223:operator_if_exp:8fd4ccb4": _RENDER_PATH,
    "realstate/kernel/rope.py:224:operator_swap_op:64bf363d": _RENDER_PATH,
    "realstate/kernel/rope.py:254:operator_number:5e5572b8": _GROUPING,
    "realstate/kernel/rope.py:254:operator_number:63ed2b30": _GROUPING + " (a delta-0 piece is still copied, not grouped)",
    "realstate/kernel/rope.py:254:operator_number:7d5f5a0c": _GROUPING,
    "realstate/kernel/rope.py:254:operator_swap_op:4296ae36": _GROUPING,
    "realstate/kernel/rope.py:254:operator_swap_op:a782ff82": _GROUPING,
    "realstate/kernel/rope.py:254:operator_swap_op:b37311de": _GROUPING,
    "realstate/kernel/rope.py:299:operator_if_exp:b6a22673":
        "_rotate_in_place narrowing even when the region is the whole tensor: a narrow over the full length is a "
        "view of the same elements",
    "realstate/kernel/rope.py:44:operator_swap_op:e1a66908":
        _CHUNK_SIZE + " (1 >> 19 = 0: every render chunked, a row at a time)",
    "realstate/kernel/rope.py:117:operator_if_exp:84468763":
        "_span_tables concatenating a single part instead of making it contiguous: torch.cat of one tensor is a "
        "copy with the same values",
    "realstate/kernel/rope.py:127:operator_number:11bb79c1": _TABLE_CACHE,
    "realstate/kernel/rope.py:127:operator_swap_op:4a63809e": _TABLE_CACHE,
    "realstate/kernel/rope.py:127:operator_swap_op:6db34f07": _TABLE_CACHE,
    "realstate/kernel/rope.py:127:operator_swap_op:8a220fbd": _TABLE_CACHE,
    "realstate/kernel/rope.py:185:operator_if_exp:fbd841f7": _RENDER_PATH,
    "realstate/kernel/rope.py:186:operator_swap_op:38d770ae": _RENDER_PATH,
    "realstate/kernel/rope.py:186:operator_swap_op:b9eeb659": _RENDER_PATH,
    "realstate/kernel/rope.py:186:operator_swap_op:d8f7769c": _RENDER_PATH,
    "realstate/kernel/rope.py:187:operator_swap_op:e2917190": _RENDER_PATH,
    "realstate/kernel/rope.py:44:operator_number:3dc384a2": _CHUNK_SIZE,
    "realstate/kernel/rope.py:44:operator_number:f8e7f653": _CHUNK_SIZE,
    "realstate/kernel/rope.py:46:operator_number:9eda7764": _TABLE_CACHE,
    "realstate/kernel/rope.py:46:operator_swap_op:fbb1b248": _TABLE_CACHE + " (1 >> 14 = 0: nothing is cached)",
    "realstate/kernel/rope.py:100:operator_number:c5391e03":
        "_runs' end sentinel (1, 0) instead of (0, 0): its delta 0 closes the last run before its length is "
        "added, so only the unused final position changes",
    "realstate/kernel/order_value.py:261:operator_number:f89da55e":
        "shifts clamped at 1 instead of 0: a shift is positive for every row with a nonzero lower level, and a row "
        "whose lower levels are all zero has accumulator 0, which any shift leaves 0 with no sticky bit",
    "realstate/kernel/order_value.py:262:operator_number:eba1bf52":
        "shifts clamped at 64 instead of 63: below the top the accumulator is under 2^55 in magnitude, and numpy "
        "defines int64 shifts by 64 as full shifts (x >> 64 is 0 or -1, x << 64 is 0), so high, the sticky bit "
        "and the sum are what a shift by 63 gives",
    "realstate/kernel/order_value.py:201:operator_number:7493ebee": _WIDER_SIGMA + " (spread at least 1)",
    "realstate/kernel/order_value.py:201:operator_swap_op:62d30026": _WIDER_SIGMA + " ((length + 1).bit_length() >= M)",
    "realstate/kernel/order_value.py:197:operator_number:b2bc74a8":
        "the first level's sigma one binade larger (2^(e+3)): still above twice the row sum, and the final "
        "accumulator still holds at least 2^57 > 2^54 when the sum is inexact, so round to odd gives the same bits",
    "realstate/kernel/order_value.py:204:operator_number:d28a8d81":
        "level 1's sigma halved (2^(k0-54+M)): the level-0 remainders are at most half a grid step, 2^(k0-54), "
        "so n of them still sum to at most sigma and every level-1 sum stays exact",
    "realstate/kernel/order_value.py:206:operator_number:2589836e": _PATH_CHOICE + " (rows_left from the row length)",
    "realstate/kernel/order_value.py:176:operator_swap_op:7c5dcf9b": _PESSIMISTIC + " (e + 52: almost no row is plain)",
    "realstate/kernel/order_value.py:176:operator_swap_op:f2326ee7": _PESSIMISTIC + " (> instead of >=)",
    "realstate/kernel/order_value.py:180:operator_name:f9b513eb":
        "correctly_rounded_row_sums overwriting its input by default: the only caller relying on the default "
        "passes the norms, which nothing reads after the total",
    "realstate/kernel/order_value.py:189:operator_swap_op:4f19656d": _UNREACHED_BOUND,
    "realstate/kernel/order_value.py:132:operator_number:17f59e1d":
        "reshape(1, -2) instead of reshape(1, -1): numpy takes any negative size as the one unknown dimension "
        "(numpy 2.4), so the same [1, count] array",
    "realstate/kernel/order_value.py:176:operator_number:d52728ff":
        "the plain-sum test accepting a lowest square bit of e - 53 (not e - 52): still sound, since the squares "
        "are >= 0, so every partial sum is at most the estimate (< 2^e) and, a multiple of 2^(e-53) below 2^e, "
        "has at most 53 bits: no addition rounds; the plain sum is exact and m has the same bits",
    "realstate/kernel/order_value.py:129:operator_if_exp:09e77268": _PATH_CHOICE + " (the fsum_norms_up_to override ignored)",
    "realstate/kernel/order_value.py:139:operator_number:837c4749": _PROBES,
    "realstate/kernel/order_value.py:140:operator_number:6e2c30de": _PROBES,
    "realstate/kernel/order_value.py:141:operator_number:cfade2d8": _PROBES,
    "realstate/kernel/order_value.py:141:operator_number:fd4aac88": _PROBES,
    "realstate/kernel/order_value.py:160:operator_name:881c6ba6": _PESSIMISTIC,
    "realstate/kernel/order_value.py:160:operator_number:44456bd6": _PESSIMISTIC,
    "realstate/kernel/order_value.py:160:operator_number:779241d3": _MASK_LOW_BIT,
    "realstate/kernel/order_value.py:160:operator_number:a0b929a0": _PESSIMISTIC,
    "realstate/kernel/order_value.py:161:operator_name:ae109e74": _PESSIMISTIC,
    "realstate/kernel/order_value.py:161:operator_number:243385e5": _MASK_LOW_BIT,
    "realstate/kernel/order_value.py:161:operator_number:c2edacce": _PESSIMISTIC,
    "realstate/kernel/order_value.py:162:operator_number:2549eca2": _UNREAD_F32,
    "realstate/kernel/order_value.py:162:operator_number:5fd0d139": _UNREAD_F32,
    "realstate/kernel/order_value.py:162:operator_number:73a2ca2b": _UNREAD_F32,
    "realstate/kernel/order_value.py:162:operator_number:c1e2c324": _UNREAD_F32,
    "realstate/kernel/order_value.py:160:operator_number:6147cc7b": _PESSIMISTIC,
    "realstate/kernel/order_value.py:161:operator_number:015f9860": _PESSIMISTIC,
    "realstate/kernel/order_value.py:162:operator_name:30851ce8": _PESSIMISTIC,
    "realstate/kernel/rope.py:46:operator_number:071f8317":
        "_CACHED_TABLE_ELEMENTS: the size up to which rotation tables are cached; a cached table and a rebuilt "
        "one hold the same values",
    "realstate/kernel/render.py:310:operator_number:0838a5d0":
        "naive_concat's default base: the naive render re-encodes nothing, so its bytes do not depend on the "
        "base, and the base is not part of the DynamicCache it returns",
    "realstate/kernel/order_value.py:60:operator_number:a4cd0307":
        "m's shape check also refusing head_dim 1: no RoPE geometry has an odd head_dim (the rotation pairs "
        "the two halves), so no valid fragment is refused",
    "realstate/kernel/order_value.py:43:operator_number:4ac05d37": _BLOCKS,
    "realstate/kernel/order_value.py:43:operator_number:a407fd6d": _BLOCKS,
    "realstate/kernel/order_value.py:43:operator_swap_op:d8ef9393": _BLOCKS + " (1 >> 16 = 0 gives one row per block)",
    "realstate/kernel/order_value.py:45:operator_number:560b00ac": _PATH_CHOICE,
    "realstate/kernel/order_value.py:86:operator_if_exp:6cda6c81": _BLOCKS + " (block_rows ignored: the probes' blocks "
                                                            "become the default one)",
    "realstate/kernel/order_value.py:47:operator_number:322d8c7f":
        "_GUARD_BITS 9 instead of 8: the accumulator stays below 2^63 (level sums have at most 53 bits) and "
        "round to odd needs only two bits below the result's last place, so the same bits (3,000 random and "
        "adversarial rows against Fraction sums agree)",
    "realstate/kernel/order_value.py:48:operator_number:675dbeb3": _UNREACHED_BOUND,
    "realstate/kernel/order_value.py:48:operator_number:98e3cd68": _UNREACHED_BOUND,
    "realstate/kernel/order_value.py:49:operator_number:2c54e98c": _UNREACHED_BOUND,
    "realstate/kernel/order_value.py:49:operator_number:c9b52151": _UNREACHED_BOUND,
    "realstate/kernel/order_value.py:112:operator_remove_unary_ops:390709dc":
        "the plain-sum exactness test applied to float32 and skipped for 16-bit keys: the test is sound for "
        "any format (a row it passes really has an exact float64 sum), and skipping it only sends rows to the "
        "exact path: the same bits",
    "spec/claims.py:92:operator_number:883afe03": _DISPLAY,
    "spec/claims.py:106:operator_number:87892206": _DISPLAY,
    "spec/claims.py:127:operator_number:a9daff20": _DISPLAY,
    "spec/claims.py:132:operator_number:b37d6f9e": _DISPLAY,
    "spec/claims.py:139:operator_if_exp:3287fd25": _DISPLAY,
    "spec/claims.py:139:operator_if_exp:78849e3c": _DISPLAY,
    "spec/claims.py:139:operator_keywords:aea44d55": _DISPLAY,
    "spec/claims.py:141:operator_swap_op:efffcd67": _DISPLAY,
    "spec/claims.py:150:operator_swap_op:06953e44": _DISPLAY,
    "spec/claims.py:156:operator_number:564ab3b4": _DISPLAY,
    "spec/claims.py:180:operator_keywords:6281ee65": _ONLY_SELECTION,
    "spec/claims.py:180:operator_swap_op:72b1d4c8": _ONLY_SELECTION,
    "spec/claims.py:180:operator_swap_op:e19abd99": _ONLY_SELECTION,
    "realstate/kernel/order_value.py:113:operator_name:8f3b1c71": _COPY,
    "realstate/kernel/order_value.py:118:operator_name:c7379117": _COPY,
    "realstate/kernel/order_value.py:127:operator_name:d2d1c811": _COPY,
    "realstate/kernel/order_value.py:193:operator_if_exp:7022c549": _COPY,
    "realstate/kernel/order_value.py:193:operator_if_exp:e8b3cc60": _COPY,
    "realstate/kernel/order_value.py:117:operator_number:f7e19319": _PATH_CHOICE,
    "realstate/kernel/order_value.py:117:operator_swap_op:4a1b19e6": _PATH_CHOICE,
    "realstate/kernel/order_value.py:117:operator_swap_op:dc2ad035": _PATH_CHOICE,
    "realstate/kernel/order_value.py:129:operator_swap_op:e95ab786": _PATH_CHOICE,
    "realstate/kernel/order_value.py:212:operator_number:182e5c01": _PATH_CHOICE,
    "realstate/kernel/order_value.py:212:operator_swap_op:026f15c0": _PATH_CHOICE,
    "realstate/kernel/order_value.py:212:operator_swap_op:be035880": _PATH_CHOICE,
    "realstate/kernel/render.py:148:operator_swap_op:5295901b": _ONE_DEVICE,
    "spec/fragment_set.py:26:operator_number:2fda3295":
        "the seed of the 'shuffled' iteration order: any seed is a shuffle; the correct render passes under "
        "every order",
    "spec/ids.py:16:operator_swap_op:ec4329a7":
        "input validation of content ids (wrong type or length): only invalid input reaches it, which verify "
        "never builds; tests/test_spec_*.py test the rejections",
    "proofs/ordering.py:267:operator_swap_op:898989f4":
        "the guard raises a clear TypeError when spec returns something other than a 64-bit word; with 'or' a "
        "word of another width passes it and the equality on the next line raises z3's sort mismatch instead: "
        "prove fails either way, and never on the correct code",
    "realstate/kernel/fragment.py:34:operator_swap_op:8532bb8f":
        "tensor_bytes moves a non-CPU tensor to the CPU first; on this CPU-only machine every tensor is already "
        "there, so the inverted test changes nothing verify can run (on a CUDA machine the GPU replay's content "
        "ids would crash: that is the device check docs/RESULTS.md asks for)",
    "proofs/render.py:328:operator_number:4eda4022":
        "c3_sorted_unique_without_tiebreak at N = 3 instead of 2: still refuted (equal-m fragments exist at any "
        "N >= 2), the same verdict",
    "proofs/ordering.py:36:operator_number:3da6244d": _BITVEC_MOD,
    "proofs/ordering.py:36:operator_number:c2116454": _BITVEC_MOD,
    "proofs/ordering.py:36:operator_swap_op:d0e075e2": _BITVEC_MOD,
    "proofs/render.py:273:operator_if_exp:2102bef4": _EXPORT_ONLY,
    "proofs/render.py:273:operator_if_exp:b3af452e": _EXPORT_ONLY,
    "proofs/render.py:273:operator_keywords:71b16c7d": _EXPORT_ONLY,
    "proofs/render.py:274:operator_if_exp:224fe01e": _PREFER,
    "proofs/render.py:274:operator_if_exp:48d2550b": _PREFER,
    "proofs/render.py:274:operator_keywords:8c4ee3a8": _PREFER,
    "proofs/fragment_set.py:245:operator_name:c0f94d0e":
        "the changed Delivered(u, ...) is in the witness text of c7_invariant_initially (set_witness), not in "
        "its claim: presentation only",
    "proofs/fragment_set.py:273:operator_number:12aad63e":
        "bounded_delivery's default 6 -> 7: prove proves the same statement for up to 7 deliveries (a stronger "
        "bounded check, still proved); the row keeps its name",
    "proofs/render.py:220:operator_number:4c716501":
        "BOUND 10 -> 11: the bounded cross-check is proved for lengths up to 11 instead of 10 (stronger, still "
        "proved)",
    "proofs/render.py:243:operator_swap_op:e89cb399":
        "the prefix constraint active[k+1] => active[k] becomes active[k-1] => active[k]: a weaker hypothesis "
        "(it no longer forces the active flags to be a prefix), under which the bounded statement is still "
        "proved: a stronger theorem, the same verdict",
    "proofs/bag.py:41:operator_swap_op:1f2840d8":
        "c4_bag_merge_not_commutative expects REFUTED: the negated law a ++ b != b ++ a is false too (a = b), "
        "so the row still refutes, with another witness. C4 itself is also checked on concrete BagMerge renders "
        "by check and realstate, which would catch a commutative bag merge",
    "spec/ordering.py:66:curated:stable-argsort-replaced-by-an-unstable-one:f41a2b7b":
        "keys of distinct fragments are distinct (the id tie-break) and a set holds each id once, so no "
        "two items a render sorts ever tie: any correct sort, stable or not, gives the same order",
    "realstate/kernel/order_value.py:86:operator_number:3603fe4d":
        "block = min(count, max(2, ...)) instead of max(1, ...): only the block size of an exact, row-wise "
        "computation changes (rows never span blocks' results), so m has the same bits",
    "realstate/kernel/order_value.py:208:operator_swap_op:c8696ff5":
        "len(levels) >= _MAX_LEVELS in a guard that cannot fire (each level takes >= 12 bits off, 4200 levels "
        "are never reached)",
    "realstate/kernel/order_value.py:161:operator_number:c42b85ba":
        "float16 exponent shift 10 -> 11 in the plain-sum exactness test: the field read is floor(f/2) <= f, "
        "so the test only gets more pessimistic and more rows take the exact path: the same bits",
    # the instruments (canonmerge audit --targets instruments)
    # check's pipeline, a per-file sample (audit --targets instruments --file modelcheck/shards.py --sample 8 --seed 41)
    "modelcheck/shards.py:46:operator_number:f7a27df6":
        "the shards of N = 6 split by a prefix of 3 instead of 2: prefixes() still lists every prefix that starts a "
        "schedule and the plan drops none that does, so the same schedules are checked in more, smaller shards; "
        "check's defaults stop at N = 5",
    "modelcheck/shards.py:185:operator_swap_op:277971ea":
        "a universe shard's weight (factorial(top + 1) * 20 instead of / 20): it orders the shards, largest first, "
        "not what they check; results merge in plan order",
    "modelcheck/shards.py:232:operator_number:c70b1808":
        "a gossip task's default weight (1.0 instead of 0.0): the runner passes its weight (infinity) explicitly, "
        "and the weight only orders the tasks",
    "modelcheck/shards.py:379:operator_augmented_assignment:49d6ff0d":
        "the run's render count in the JSON (the last shard's instead of the sum): no row reads it; each shard's own "
        "renders are in shard_costs",
    # the same for modelcheck/coverage.py (--file modelcheck/coverage.py --sample 8 --seed 41)
    "modelcheck/coverage.py:318:operator_swap_op:5ea68102":
        "the invalid-schedules count subtracted instead of added: every shard's is then <= 0 and nonzero exactly when "
        "it was, and a cell is exact only when it is zero (and when distinct == count, which an invalid schedule "
        "breaks anyway)",
    "modelcheck/coverage.py:319:operator_augmented_assignment:33cf8d3d":
        "the distinct count set instead of added: a shard runs run_c3 once, so each family is watched once per "
        "watcher and its Seen starts at zero; shards are summed by Seen.add",
    # the same for modelcheck/instruments.py (--file modelcheck/instruments.py --sample 8 --seed 41)
    "modelcheck/instruments.py:99:operator_if_exp:9a6404b2":
        "how an unjudged count is named (its canary always shown): the counts row fails on the list being non-empty; "
        + _DISPLAY,
    "modelcheck/instruments.py:206:operator_if_exp:37d0c28c":
        "the arrival canary's BLIND figure naming unreproduced traces when there are none: the row's outcome is "
        "holds_if(not blind); " + _DISPLAY,
    # the same for modelcheck/unions.py (--file modelcheck/unions.py --sample 8 --seed 41)
    "modelcheck/unions.py:46:operator_swap_op:8d690e4e":
        "when the labels table is rebuilt (its size against objects - copies): a table rebuilt more often is the same "
        "table; it is stale only when its size matches, which with copies it never does after a rebuild",
    "modelcheck/unions.py:97:operator_swap_op:1d7480ec":
        "the tree memo also drops the ranges that end at the kept prefix: they are rebuilt by the same merges, "
        "less is shared, every root is still a fresh merge",
    "modelcheck/unions.py:114:operator_keywords:d32d33dd":
        "leaving the leaf-order loop after N = 1's tree instead of continuing: N = 1 has one leaf order",
    "modelcheck/canary.py:142:operator_name:7e287a75":
        "the shard canary's salted digest packs the render base unsigned: bases are positions, never negative, "
        "and a non-negative int packs to the same 8 bytes either way (a negative one would raise, never pass)",
    "modelcheck/coverage.py:158:operator_number:38f44aa8":
        "the size up to which Signatures memoizes its validity test: a cached answer and a recomputed one are the same",
    "modelcheck/gossip_model.py:35:operator_number:00fce7be":
        "MAX_STATES, the largest --max-states accepted: input validation only; verify's explorer runs far below it",
    "modelcheck/gossip_model.py:53:operator_number:b99c5777": "GossipConfig.validate's bound on replicas: " + _VALIDATION,
    "modelcheck/gossip_search.py:49:operator_number:d1135e9a":
        "GossipResult.depth's start value: depth is max(depth, d + 1) over the moves explored, so any exploration "
        "with a move reports the same depth, and only the gossip table and JSON print it",
    "modelcheck/order_checks.py:162:operator_number:69a7cf15": _DIGEST_FIGURE,
    "modelcheck/shards.py:353:operator_swap_op:44cde09d":
        "which shard details reach the merged tally's JSON (a C4 witness, the digests-per-set figure, recomputed "
        "across shards anyway): Check.tally decides from checked and found, never from details",
    "modelcheck/gossip_model.py:176:operator_swap_op:0ff9abf5":
        "flush's re-send of a dropped message (a TypeError instead): only the trace of a fair-exchange violation "
        "found at a state holding a dropped message runs it, in a run that already fails (the verdict comes from "
        "exchanged(), which makes the same merges without the actions); the canary's is the initial state",
    "modelcheck/gossip_search.py:120:operator_swap_op:44b332b9":
        "the fair-exchange count of a run that found a fair-exchange violation: the row already fails; the count "
        "is only printed",
    "modelcheck/gossip_search.py:174:operator_number:d05ba217":
        "the transition count recorded with the root node, reported only for a violation at the root: a figure",
    "modelcheck/gossip_search.py:187:operator_swap_op:6a6eaade": "how often the explorer reports progress: " + _DISPLAY,
    "modelcheck/gossip_search.py:224:operator_swap_op:c2f1d3be":
        "the gossip explorer's check batch (128 or 129 nodes): every reached node is still checked, the remainder "
        "by the final check_pending, with the counts recorded when it was reached",
    "modelcheck/order_checks.py:33:operator_number:64eb8912": _BATCH_ONLY,
    "modelcheck/order_checks.py:54:operator_if_exp:d43e3607":
        "a head swap that changes nothing returned as its own twin: _with_twin finds it among the universe's "
        "descriptions (the fragment itself, or an equal copy with the same id) and the sets checked are the same",
    "modelcheck/order_checks.py:222:operator_swap_op:02451960": "the engine-order row's seconds: " + _DISPLAY,
    "modelcheck/shards.py:47:operator_number:5573b670":
        "LAW_RENDERS, an estimate of a shard's weight: it orders the shards (largest first), not what they check",
    "modelcheck/shards.py:202:operator_swap_op:a61abc5c":
        "the bag canary shard's position in the plan (start - k instead of start + k): positions only order the "
        "merge of shard results, and the bag canary's results go to its own tallies, which nothing else reads",
    "modelcheck/instruments.py:128:operator_name:a8c5e45d":
        "the bag canary held to the closed form of no arity (0) instead of N = 2..3 (8): its 6 orders are off "
        "either, so the same comparison must flag it the same way; the record beside it (the canary equal to "
        "N = 3's closed form) and the run without the bag checks (held to 0) pin the arities themselves",
    "modelcheck/shards.py:303:operator_swap_op:334f930e":
        "a shard's CPU seconds: printed, and the canaries' share of them is reported in the JSON; no row reads it",
    "modelcheck/shards.py:389:operator_swap_op:26a7df6f":
        "the per-set violation sum that tells a split from a shard's own finding is only tested for zero, and a "
        "sum of non-negative counts is zero exactly when its negation is",
    "modelcheck/universe_search.py:50:operator_number:be07f6be":
        "UniverseSearch's default redeliveries: every caller passes it (modelcheck.shards.perform, the replay's "
        "held universe)",
    "modelcheck/universe_search.py:91:operator_swap_op:44c70224": "the count of renders: " + _DISPLAY,
    "modelcheck/universe_search.py:97:operator_swap_op:21536ea5": "the count of renders: " + _DISPLAY,
    "modelcheck/universe_search.py:174:operator_augmented_assignment:8fba9440":
        "the oracle row's count of renders compared (never 0 once a batch ran, so never UNKNOWN): " + _DISPLAY,
    "modelcheck/universe_search.py:174:operator_swap_op:3a07900e":
        "the oracle row's count of renders compared (never 0 once a batch ran, so never UNKNOWN): " + _DISPLAY,
    "realstate/processes/soak/judge.py:27:operator_number:8861bd6a":
        "the cleaned-temporaries count a replica row starts with: overwritten by the read, or left on an unreadable "
        "replica, whose row fails anyway; only the soak's table prints it",
    "realstate/processes/soak/judge.py:28:operator_name:f3982457":
        "verify_ok's start value stands only when reading the replica raised, and then the replica is listed as "
        "unreadable, which fails the soak row on its own",
    "realstate/kernel/rope.py:152:operator_number:80b57456": _TABLE_CACHE,
    "realstate/kernel/rope.py:152:operator_swap_op:13c16f66": _TABLE_CACHE,
    "realstate/kernel/rope.py:152:operator_swap_op:4ff21139": _TABLE_CACHE,
    "realstate/kernel/rope.py:152:operator_swap_op:7d0de9f2": _TABLE_CACHE,
    "realstate/kernel/rope.py:190:operator_if_exp:013e3fa3": _KERNEL_PATH,
    "realstate/kernel/rope.py:190:operator_if_exp:6a689833": _KERNEL_PATH,
    "realstate/kernel/rope.py:269:operator_remove_unary_ops:efccf4fc": _KERNEL_PATH,
    "realstate/kernel/render.py:142:operator_swap_op:9c1b8979": _ONE_DEVICE,
    "realstate/kernel/render.py:146:operator_remove_unary_ops:bf5efad0": _ONE_DEVICE,
    # the instruments' fresh sample (audit --targets instruments --sample 85 --seed 2)
    "modelcheck/coverage.py:320:operator_augmented_assignment:9e16d430":
        "the repeated-schedules count overwritten instead of summed: a cell is exact only when distinct == count, and "
        "count = distinct + invalid + repeated, so any repeat already fails the cell whatever this count says",
    "modelcheck/gossip.py:144:operator_swap_op:b4c13e66": "the proved-merges figure in the gossip JSON: " + _DISPLAY,
    "modelcheck/gossip_search.py:121:operator_if_exp:8a0f5211":
        "the trace of a same-set violation also carries the fair exchange's moves after the violating state: the "
        "verdict, its depth and pair are the same, and the replay (run on the canary's trace in every exploration) "
        "still reproduces it",
    "modelcheck/instruments.py:202:operator_remove_unary_ops:9f84d3c6":
        "which figure the arrival canary's row prints: its outcome is holds_if(not blind), whatever the figure",
    "modelcheck/order_checks.py:158:operator_number:fb026392":
        "the universe table's violations column (+2 per differing render): the tally's found, counted by fail(), "
        "decides the row",
    "modelcheck/shards.py:194:operator_swap_op:f0d3692b":
        "canary shards also planned for a run that selects no C3 family: no row reads them (judge has no families "
        "then), so only work is added",
    "modelcheck/shards.py:379:operator_swap_op:fa992e01": "the merged render count: " + _DISPLAY,
    "oracle/compare.py:55:operator_swap_op:e29ba9dc":
        "the hex width a mismatch report prints elements with: only a failing comparison's text uses it",
    "realstate/bench/structural.py:119:operator_swap_op:1f045ac5": "the witness cells' figure of the BagMerge row: " + _DISPLAY,
    "realstate/exchange/stores/directory.py:74:operator_number:e81f33df":
        "bytes per write call (1 or 2 MiB): a torn write leaves a prefix of blocks either way, which the reader "
        "refuses, and the soak's fragments are smaller than either block",
    "realstate/processes/replicate/faulty_gathers.py:52:operator_number:431f9315":
        "which digest the longer-list control appends (the last or the one before): the list is one longer either "
        "way, which is what the comparison must reject",
    "realstate/processes/soak/judge.py:52:operator_if_exp:1851b9fc":
        "the union of an empty ledger's sets: set().union() of nothing is the empty set, as the else branch gives",
    "realstate/processes/soak/ledger.py:37:operator_name:b9dc5a12":
        "the key order of a ledger line's JSON: read_ledger parses it by key",
    "realstate/processes/soak/neighbour.py:165:operator_number:b538ce30": "how many changed entries a neighbour problem lists: " + _DISPLAY,
    "realstate/processes/soak/neighbour.py:168:operator_number:c35e058a": "how many replicas a neighbour problem lists: " + _DISPLAY,
    "realstate/processes/soak/power.py:204:operator_name:4419bde6":
        "the power-loss model's work directory made without parents: check_put's caller made its parent",
    # the instruments' second fresh draw (audit --targets instruments --sample 85 --seed 3)
    "modelcheck/gossip_controls.py:50:operator_number:772cd8e1":
        "the gossip canary's configuration with one bound one larger: the order-by-arrival render is still reported as the shallowest violation of each check at the depths expected, which the canary requires",
    "modelcheck/gossip_controls.py:111:operator_name:93fa5105":
        "the canary's verdict for a universe of fewer than 2 fragments: every universe holds at least 6, so no input reaches it",
    "modelcheck/gossip_controls.py:240:operator_keywords:fe15f490":
        "FragmentIndices numbering a fragment by the first other description: with the moves check's two fragments this swaps their numbers, a relabelling that changes no count",
    "modelcheck/gossip_search.py:64:operator_number:af2584e3":
        "GossipResult's default count of comparisons without renders: every search overwrites it with the verdict's count",
    "modelcheck/gossip_search.py:188:operator_number:e9cd7a7c":
        "how often the explorer reports progress: " + _DISPLAY,
    "modelcheck/gossip_search.py:202:operator_augmented_assignment:6e65bf86":
        "the merges count (the proved-merges figure): " + _DISPLAY,
    "modelcheck/gossip_symmetry.py:107:operator_swap_op:61d04b72":
        "which of the relabellings giving the same least encoding is kept: the key is the same, and the node relabelled by either has the same digest (replicas of one signature group hold equal marks and homes)",
    "modelcheck/gossip_verdict.py:53:operator_swap_op:b8499b6f":
        "the render-call count: " + _DISPLAY,
    "modelcheck/gossip_verdict.py:115:operator_augmented_assignment:37750d7b":
        "the count of comparisons without a digest set to one instead of incremented: a run's count is only tested for zero, and any such comparison makes it at least one either way; the unrendered control's pair cases each hold one pair, due exactly one",
    "modelcheck/instruments.py:335:operator_number:e644d917":
        "which unsampled shard the failing arrival row names in its figure: " + _DISPLAY,
    "modelcheck/order_checks.py:204:operator_augmented_assignment:ee2b0e62":
        "engine_order runs once per universe shard on a fresh tally, so setting and adding its count give the same number",
    "modelcheck/order_checks.py:222:operator_augmented_assignment:b2db007b":
        "the engine-order row's seconds: " + _DISPLAY,
    "modelcheck/shards.py:185:operator_swap_op:c57d6c3f":
        "a universe shard's weight (LAW_RENDERS - refinement): it orders the shards, largest first, not what they check",
    "modelcheck/shards.py:362:operator_augmented_assignment:e8ec288a":
        "the universe table's violations column merged by assignment: " + _DISPLAY,
    "realstate/exchange/stores/directory.py:59:operator_remove_unary_ops:86404673":
        "the words that name a foreign entry's kind: " + _DISPLAY,
    "realstate/processes/replicate/faulty_gathers.py:48:operator_swap_op:a0064bf0":
        "which rank's set digest the control changes (the last, or rank 1, the same of two): a changed digest at any rank must be rejected",
    "realstate/processes/replicate/faulty_gathers.py:52:operator_swap_op:0c8d4dcc":
        "which rank's gathered list the control lengthens (the last, or rank 1, the same of two): a longer list at any rank must be rejected",
    "realstate/processes/replicate/faulty_gathers.py:52:operator_swap_op:dab3c597":
        "which digest the longer-list control appends: the list is one longer either way, which is what the comparison must reject",
    # the per-file samples of the stores, the soak's neighbour and the faulty gathers (--sample 8 --seed 41)
    "realstate/processes/soak/neighbour.py:173:operator_number:00b3d63e": "how many unplanted foreign entries a neighbour problem lists: " + _DISPLAY,
    "realstate/processes/soak/neighbour.py:234:operator_number:a4c8a42a": "how much of the reason a replica that could not be judged prints: " + _DISPLAY,
    "realstate/processes/soak/neighbour.py:294:operator_number:8d57ceb5": "how many violations an unseen neighbour control quotes: " + _DISPLAY,
    "realstate/processes/replicate/faulty_gathers.py:48:operator_number:3bebc66a":
        "which rank's set digest the control changes (the last, or the one before it: the other rank of two, "
        "another rank of more): one rank's changed digest, at any rank, is what the comparison must reject",
    "realstate/processes/replicate/faulty_gathers.py:48:operator_swap_op:b157aafb":
        "which rank's set digest the control changes (the last, or rank 1, the same of two; another rank of more): "
        "one rank's changed digest, at any rank, is what the comparison must reject",
    "realstate/processes/replicate/faulty_gathers.py:98:operator_number:ad0f0c3d":
        "how much of a failed comparison's error a control's fate quotes: the fate then starts 'no verdict' either "
        "way, never 'accepted' or 'rejected', which is all the verdict reads; " + _DISPLAY,
    "realstate/bench/structural.py:177:operator_number:78d289dd":
        "the seconds a structural control's rows are given: _flagged and _naming_rows read only their outcomes "
        "and findings",
    "realstate/processes/soak/power.py:44:operator_number:ec79f636":
        "how many blocks the power-loss model splits a put into (4 or 5): a crash state at every block boundary either way, judged by the same invariants",
    "realstate/processes/soak/power.py:181:operator_name:d95526a1":
        "a crash state's directory made without parents: its parent is the model's own work directory, made before",
    "realstate/processes/soak/power.py:74:operator_number:381a3778":
        "the temporary name of a wrong-order control (16 or 17 characters): each control is reported for the step "
        "it never makes durable, whatever its temporary is called (a 17-character one reads as a foreign entry, "
        "which the store tolerates)",
    # the gossip explorer's controls that need no second fault: their own survivors
    "modelcheck/gossip_controls.py:394:operator_number:c98ae8a1":
        "the unrendered control's one-digest case fills replica 1's record instead of replica 0's: the pair is (0, 1) either way, so one side of it is still missing, and the verdict's test is symmetric in the two",
    "modelcheck/gossip_controls.py:421:operator_number:373fb706":
        "the key control's replicas all marked 1 instead of 0: one mark for all four in all three nodes, so every replica's signature is still the same in all three and the keys relate as before",
    "modelcheck/gossip_controls.py:421:operator_number:5d590c89":
        "the key control's nodes with fragment 1 published instead of 0, so fragment 0 waits at replica 0: the relabelled four-cycle (0 3 1 2) is also the first one relabelled by a rotation that fixes replica 0, and the two two-cycles still have signatures equal to the four-cycle's, replica by replica, so both relations are the same",
    "modelcheck/gossip_controls.py:421:operator_number:c1f7a0e3":
        "the key control's marks tuple one entry longer: the key reads one mark per configured replica (four), never the fifth",
    "modelcheck/gossip_controls.py:422:operator_number:d0e27bad":
        "the key control's messages carry snapshot mark 1 instead of 0: the same in every message of all three nodes, so every replica's signature is still the same in all three and only the endpoints tell them apart",
    # a per-file sample of the gossip verdict and symmetry (audit --file F --sample 8 --seed 41)
    "modelcheck/gossip_verdict.py:45:operator_number:9048bbe1":
        "the render memo by state object never hits (the digest compared with the state): render() is called only for the union (once per search) and a counterexample trace's states, so the same digests come back for a render that is a function of the state; what differs is the renders figure in the JSON, and for a render that changes between calls (already a violation the batch renders report) a trace's recorded digest",
    "modelcheck/gossip_verdict.py:99:operator_number:2d20d555":
        "the first exchanged digest's index starting at 1: it is read only when the exchange is rendered, and then set to the jobs queued before it",
    "modelcheck/gossip_verdict.py:120:operator_if_exp:23594aa5":
        "the exchanged digests sliced even when no exchange was made: with a fair exchange the flush publishes every fragment at its home and every holder sends to every other, so no replica holds nothing after it and the exchange is always made (the branch is reached only by a model that loses a fragment)",
    "modelcheck/gossip_verdict.py:121:operator_if_exp:2975699d":
        "the exchanged states' missing digests counted even when no exchange was made: as for the slice above, a fair exchange always leaves every replica holding something, so the exchange is always made",
    "modelcheck/gossip_symmetry.py:75:operator_number:bd595b75":
        "the key of a node without messages writes 1 for every replica's sent count instead of 0: the same for every such node (the same order of replicas, the same equalities), and such keys still differ from every key of a node with messages at the message count written before the replicas (0 against at least 1)",
    "modelcheck/gossip_symmetry.py:135:operator_number:fd68570b":
        "the merge proofs' digests 17 bytes instead of 16: every digest compared is made by the same call, so a relabelling still gives an equal digest and another node a different one (a collision less likely still)",
    "modelcheck/gossip.py:100:operator_number:fb40f952":
        "the blind line of an unrendered comparison the verdict reported as a violation names the verdict's pair instead of its kind: the line is appended whatever it names (text only)",
    # the instruments' third fresh draw (audit --targets instruments --sample 85 --seed 4)
    "modelcheck/gossip.py:155:operator_swap_op:f7de8405":
        "_differences builds the text of a cross-check that already disagrees (gossip.py calls it only on the blind "
        "line): it can change that line, or fail while a failing row is reported, never a verdict",
    "modelcheck/gossip_controls.py:50:operator_number:8b3e9748":
        "the order-by-arrival canary's configuration with in-flight <= 3 instead of 2: the canary still has its "
        "shallowest violation and its one-move-short copy (the depth of the first violation does not depend on the "
        "bound above 2), so it is caught the same way; only more states are explored",
    "modelcheck/gossip_controls.py:309:operator_number:4e1d38b8":
        "the bounded check's depth at least 2 instead of 1: the reference's depth on its configuration is 10, so "
        "max(1, 5) and max(2, 5) are the same 5",
    "modelcheck/gossip_controls.py:324:operator_swap_op:5e488b8c":
        "the bounded runs' 'violation' field in the JSON: display only; their agreement reads r.violation itself",
    "modelcheck/gossip_controls.py:409:operator_number:b6be559f":
        "the orbit-key control's configuration with two fragments: the control's states publish nothing, and a "
        "second unpublished fragment's home does not bar the relabelling of the four-cycle, so the key still merges "
        "the cycle with its relabelling and tells it from two two-cycles",
    "modelcheck/gossip_search.py:174:operator_name:2e3bb427":
        "the counts recorded with the root are read only when the root itself violates: the exhaustive flag of a "
        "failing run's report, never its verdict",
    "modelcheck/instruments.py:204:operator_if_exp:837e109a":
        "the arrival canary's BLIND figure always carrying the 'no tally' suffix: text of a row that already "
        "fails (the figure is built only when some family is blind)",
    "modelcheck/shards.py:182:operator_number:9c3b8adf": "a bag shard's weight: weights order the dispatch and the progress "
        "line (Shard.weight, runner.py), never a verdict or a count",
    "modelcheck/shards.py:183:operator_number:51a26c77": "the whole-universe shard's weight: as the bag shard's, dispatch "
        "order and progress only",
    "modelcheck/shards.py:380:operator_augmented_assignment:b82e5eb0":
        "the merged CPU seconds keeping the last shard's: a figure (cpu_seconds, the canaries' share_of_cpu); no row "
        "or exit code reads it",
    "realstate/bench/structural.py:130:operator_number:b1d45898":
        "the synthetic control cells' latent_steps 1 instead of 0: read only by the cell's label (problem@L), "
        "which both the row's finding and the control's expectation take from the same cell",
    "realstate/processes/replicate/faulty_gathers.py:52:operator_number:48b2edd1":
        "the list-differs control built from the second-last rank's list: when the real round agrees every rank "
        "gathered the same list, so the control is the same longer list; when it disagrees the row fails on that",
    "modelcheck/gossip_search.py:112:operator_if_exp:0e33aa90":
        "fair exchanges counted as if the check were on when it is off: every exploration the product runs has "
        "it on (only the canary's own searches turn it off, and their figure is not read), where both count the same",
    "modelcheck/gossip_search.py:192:operator_keywords:0e4877cb":
        "a depth-bounded search stopping at its first node on the bound instead of skipping each: BFS pops the "
        "nodes in depth order, so every node left is on the bound too and none is expanded either way; and every "
        "node of the model has a move (a send while in-flight is below its bound, else a delivery), so the first "
        "node already makes the search not exhaustive, as the others would",
    # the instruments' fourth fresh draw (audit --targets instruments --sample 85 --seed 5)
    "modelcheck/canary.py:113:operator_number:9ad69f08":
        "the arrival canary's render digest at base 1 by default: every digest the canary compares is made by "
        "this method with the same default, so equal orders still give equal digests and other orders others",
    "modelcheck/canary.py:142:operator_number:6bf43716":
        "the shard-salted canary's base framed in 9 bytes instead of 8: every digest it compares is framed alike, "
        "and the salt still differs between shards",
    "modelcheck/coverage.py:92:operator_swap_op:4518adce":
        "the merged first mismatch kept only when both sides have one: the example text of a failing row and "
        "the JSON's first_fed_otherwise; the verdict reads the mismatch count",
    "modelcheck/gossip.py:70:operator_number:fae21cc6":
        "the fair exchanges due when the check is off: every exploration the product runs has it on",
    "modelcheck/gossip_controls.py:50:operator_number:8fbcdb59":
        "the order-by-arrival canary on three replicas instead of two: it is still reported as the shallowest "
        "violation with the same six-move trace, so it still sees; only more states are explored",
    "modelcheck/gossip_controls.py:55:operator_number:e3203ad9":
        "the moves check's second configuration at in-flight <= 3: the explorer and the reference are still "
        "compared on a small configuration, plain and folded, and bounded; only a larger one",
    "modelcheck/gossip_search.py:187:operator_number:6fd33431": "when the progress line is printed",
    "modelcheck/gossip_symmetry.py:125:operator_number:19d653b9":
        "the inverse label's list started with ones instead of zeros: the loop after it writes every entry "
        "(the label is a permutation), so no start value is read",
    "modelcheck/instruments.py:206:operator_if_exp:573cfef1":
        "the arrival canary's BLIND figure always naming the traces that do not reproduce: text of a row that "
        "already fails",
    "modelcheck/shards.py:302:operator_swap_op:9ec15684": "a shard's wall seconds (shard_costs): a figure, never read by a verdict",
    "realstate/bench/structural.py:141:operator_number:043e1461":
        "the distinct-answers control cell with three answers instead of two: any count above one is the fault "
        "the row flags",
    "realstate/processes/soak/neighbour.py:173:operator_swap_op:845fdec4":
        "the text of a neighbour finding (or a TypeError while it is written): only reached when the replica "
        "already violates",
    "realstate/processes/soak/neighbour.py:192:operator_number:0ff8f3af": "how many changed entries a finding's text lists",
    "realstate/processes/soak/neighbour.py:236:operator_remove_unary_ops:f0e8f664":
        "neighbour_verdict's own 'ok': the soak reads the verdict through with_controls, which sets 'ok' from "
        "the violations again; the controls read the violations",
    "realstate/processes/soak/neighbour.py:326:operator_number:b2900ce9": "how many removed entries a failing control's text lists",
    "oracle/compare.py:53:operator_augmented_assignment:83fcd0b4":
        "the layout's findings assigned instead of added: the list is empty on that line (any finding of the "
        "header fields returns just before it), so both give the same list",
    "realstate/processes/soak/judge.py:38:operator_swap_op:fd9d48dc":
        "verify_ok as 'verifies or no temporary left': the line is reached only after every listed fragment was "
        "read, validated and rendered together (a corrupt fragment or another fingerprint makes the row an error "
        "first), so the store verifies there; the two differ only with temporaries left, which the convergence "
        "row refuses on its own (left == 0 in realstate/processes/soak/outcome.py)",
    # the gossip explorer's defaults and marks, and a per-file sample of its files (--sample 8 --seed 71)
    "modelcheck/gossip_model.py:45:operator_number:93255257":
        "GossipConfig's default max_states one larger: no command takes that default (check passes its "
        "--max-states, default runner.DEFAULT_MAX_STATES, to every exploration); only the canary's searches do, "
        "and they stop at their violation within a few hundred states (2 x 2, in-flight <= 2, depth 6)",
    "modelcheck/gossip_model.py:118:operator_number:23935d9d":
        "the empty replica's mark -2 instead of -1: states are numbered from 0, so any negative mark is no "
        "state's; it sorts before every state's in the orbit key and is written the same way in the merge proofs",
    "modelcheck/gossip_controls.py:153:operator_name:4c0c0db4":
        "the cross-check's verdict for a universe of fewer than 2 fragments: every universe holds at least 6, so "
        "no input reaches it",
    "modelcheck/gossip_controls.py:218:operator_number:afc8e966":
        "orbit_count's relabelled marks list started with ones instead of zeros: the loop after it writes every "
        "entry (the relabelling is a permutation), so no start value is read",
    "modelcheck/gossip_search.py:61:operator_number:b05b6a75":
        "GossipResult's default unfolded-states count: every search overwrites it before it counts (1 with drop "
        "folding, 0 without)",
    "modelcheck/gossip_search.py:173:operator_swap_op:d37e21a0": "the gossip search's seconds: " + _DISPLAY,
    "modelcheck/gossip_verdict.py:33:operator_number:5d0da978": "the render-call count's start: " + _DISPLAY,
    "modelcheck/gossip_verdict.py:46:operator_number:f627a156": "the render-call count's step: " + _DISPLAY,
    # the per-file samples of the power-loss model, the bench rows, the neighbour and the directory store
    # (--sample 8 --seed 71), and the survivors of the controls added for them
    "realstate/bench/structural.py:95:operator_number:b7713874": "each structural row's share of the bench's seconds: " + _DISPLAY,
    "realstate/bench/structural.py:184:operator_if_exp:150d65f7":
        "the 'controls' entry of a row's details left out: the row's outcome and BLIND figure are decided from "
        "the controls themselves, never from that entry; " + _DISPLAY,
    "realstate/processes/soak/power.py:254:operator_name:b0d2ff8a":
        "the power-loss model's work directory made with exist_ok=False: the soak names it under its own fresh "
        "temporary directory, so it never exists before",
    "realstate/processes/soak/power.py:254:operator_name:fa78c958":
        "the power-loss model's work directory made without parents: its parent is the soak's own temporary "
        "directory, made before",
    "realstate/processes/soak/neighbour.py:341:operator_number:25c9dc5e":
        "how much of an unexpected refusal the link control's fate quotes: the fate is not 'seen' either way, which "
        "is all with_controls reads; " + _DISPLAY,
    "realstate/processes/soak/neighbour.py:351:operator_name:d25976da":
        "the neighbour controls' directory made without parents: its parent is the soak's own temporary "
        "directory, made before",
    "realstate/exchange/stores/directory.py:136:operator_swap_op:e9ef1f6b":
        "a marker of exactly MAX_MARKER_BYTES (4096) refused as not small instead of as an unknown layout: the "
        "marker text is 77 bytes, so such a marker is refused either way, and no caller reads which reason",
    # the shard-plan and selection checks, a sample of their files (--file modelcheck/plan_coverage.py
    # --file modelcheck/selection_check.py --sample 24 --seed 81)
    "modelcheck/plan_coverage.py:74:operator_number:1010a8dd":
        "judge_plan's start value of the largest plan: the loop overwrites it (N = 1 always has a prefix length), "
        "and an empty plan's control is blind whatever its N and R",
    "modelcheck/plan_coverage.py:74:operator_number:827ce4b6":
        "judge_plan's start value of the largest plan: the loop overwrites it (N = 1 always has a prefix length), "
        "and an empty plan's control is blind whatever its N and R",
    "modelcheck/plan_coverage.py:75:operator_number:c6da25b9":
        "the plans also built at one re-delivery bound above the largest accepted: the same enumerators meet the "
        "same closed forms there, so only work is added",
    "modelcheck/plan_coverage.py:76:operator_number:83fb3672":
        "the plan loop also visiting N = max + 1: that arity has no prefix length, so the loop skips it (the "
        "missing-prefix list is made over the accepted arities alone)",
    "modelcheck/selection_check.py:53:operator_remove_unary_ops:a1d571e5":
        "the selection controls built from a canary C3 shard's record instead of a real one: both tallied C3 "
        "families, and the controls only leave one of them out of a record and of a selection",
    "modelcheck/selection_check.py:53:operator_swap_op:9332022d":
        "the first real C3 shard taken whether or not it tallied a C3 family: every real C3 shard tallies the "
        "run's C3 families (a run selecting none plans no C3 shard)",
    "modelcheck/selection_check.py:74:operator_if_exp:7c6f9b2b": "the selection row's figure text: " + _DISPLAY,
    "modelcheck/selection_check.py:74:operator_number:cd66f3e2": "the selection row's figure text: " + _DISPLAY,
    "modelcheck/selection_check.py:74:operator_swap_op:a4b3ed84": "the selection row's figure text: " + _DISPLAY,
    "modelcheck/selection_check.py:79:operator_swap_op:81f7438a":
        "the selection row's control_blind JSON field: the outcome is decided from the problems list; " + _DISPLAY,
    # the gossip census, a sample of its file (--file modelcheck/gossip_census.py --sample 40 --seed 1)
    "modelcheck/gossip_census.py:166:operator_number:5f3b88c7":
        "waiting messages counted as dropped codes above 1 instead of above 0: a message code is 1 + its packed "
        "endpoints and snapshot, and a snapshot is never empty (only a replica holding something sends), so every "
        "code is at least 2",
    "modelcheck/gossip_census.py:240:operator_if_exp:f70875c9":
        "the root's dropped pool given its in-flight slots of zeros also when drops are folded: zeros pack to "
        "nothing, and the moves read no dropped slot when folded",
    # the census and the explorer's controls, a sample of their files (--file modelcheck/gossip_census.py
    # --file modelcheck/gossip_controls.py --parts check --sample 40 --seed 2)
    "modelcheck/gossip_census.py:127:operator_number:b6eccbbb":
        "the relabelled-code tables built for twice as many codes: a pool slot holds a code below 2 ** msg bits, so "
        "the entries added are never read",
    "modelcheck/gossip_census.py:255:operator_number:23dffeb0": "the census's seconds: " + _DISPLAY,
    "modelcheck/gossip_census_checks.py:63:operator_if_exp:200b8d22":
        "the census control's text for a disagreement naming every configuration folded: " + _DISPLAY,
    "modelcheck/gossip_census_checks.py:45:operator_swap_op:06b96783":
        "the census comparison's doctored copy one state fewer instead of one more: either is one state off, and "
        "a comparison that cannot tell one from the other finds neither",
    "modelcheck/gossip_controls.py:52:operator_number:6003038c":
        "the cross-check on 3 x 3 instead of 3 x 2: the same comparisons (verdicts, brute-force orbits, folding) "
        "on a larger configuration, the census control reading the same constant; only slower",
    "modelcheck/gossip_controls.py:52:operator_number:f167aff4":
        "the cross-check on 4 replicas instead of 3: the same comparisons on a larger configuration; only slower",
    # the instruments' fifth fresh draw (audit --targets instruments --sample 85 --seed 6)
    "modelcheck/coverage.py:65:operator_swap_op:d59b004c":
        "the merge trees' closed form by true division: (2n-2)!/(n-1)! is an integer below 2^53 for every accepted "
        "N, so the float compares equal to every count; only its printed form gains '.0'",
    "modelcheck/coverage.py:362:operator_number:44bf9ffe":
        "which list the off-schedule example's '?' note looks in: text of a row that already fails",
    "modelcheck/gossip.py:91:operator_swap_op:cf5347fb":
        "the unproved symmetry merge's example moves in the JSON: reached only when a merge is unproved, when the "
        "run is already BLIND",
    "modelcheck/gossip_verdict.py:46:operator_augmented_assignment:2e53bca6": "the gossip render-call count: " + _DISPLAY,
    "modelcheck/instruments.py:200:operator_number:f3079f27":
        "the default of a missing unit's expected count, 1 instead of 0: the same expression also flags a unit "
        "with no expected count (`or not expected.get(.., 0)`), so every family is flagged as before",
    "modelcheck/order_checks.py:64:operator_number:4fee58c3":
        "swapped_heads_of comparing head 1 with head 1: it differs from the exchange test only for a member that is "
        "the first fragment's head exchange, which no universe holds (every pair of every universe compared "
        "both ways: the same answers); held universes have no descriptions and skip it",
    "modelcheck/order_checks.py:166:operator_swap_op:a15d8291":
        "a C3 row's digest union intersected instead: every digest beyond the fold's own is already a violation "
        "of the row, and the fold's digest (the one compared across shards) is kept either way",
    "modelcheck/order_checks.py:230:operator_swap_op:adbf2fe0":
        "a held universe's scanned numbers compared with <= its size: a held universe adds no twin, so every "
        "scanned number is below its size",
    "modelcheck/plan_coverage.py:61:operator_name:c460867b":
        "the plan control on an empty plan: the largest plan is empty only when no arity has a prefix length, "
        "when the row already fails naming each",
    "modelcheck/selection_check.py:74:operator_number:9e646b8a": "the selection row's figure text: " + _DISPLAY,
    "modelcheck/universe_search.py:184:operator_augmented_assignment:21e8de38":
        "the oracle tally's count of bag renders: a figure; the bag orders themselves are counted by the BagMerge "
        "rows' tallies, which the instruments hold to their closed form",
    "oracle/compare.py:84:operator_number:97c7a80e": "the hex width of a layout mismatch's text: " + _DISPLAY,
    "realstate/processes/replicate/faulty_gathers.py:116:operator_swap_op:4b2686a5":
        "which blind figure the faulty gathers' text names: 'ok' is counted apart from it, and the run's "
        "verdict reads 'ok'",
    "realstate/processes/soak/ledger.py:47:operator_swap_op:3fdacf2d":
        "the ledger's descriptor after close set to 1 instead of -1: the soak closes the ledger once, in "
        "tear_down, after the driver's last acknowledgment, so the mark is never read",
    "realstate/processes/soak/neighbour.py:139:operator_name:e58c58f0":
        "the outsider's directory made without parents: its parent is the soak's own work directory, which "
        "exists",
    # the instruments' sixth fresh draw (audit --targets instruments --sample 85 --seed 7)
    "modelcheck/coverage.py:42:operator_number:aa599fc5":
        "the watcher's sampling rate, one schedule in 129 instead of 128 beyond the firsts: every shard is still "
        "sampled and the samples held to what the same rule owes; on a correct build every sample agrees",
    "modelcheck/coverage.py:247:operator_augmented_assignment:bf40dae0":
        "the copy-numbering control's sampled figure: it rebuilds every schedule, and its verdict reads the "
        "mismatched, off-schedule and invalid counts, not this one",
    "modelcheck/coverage.py:369:operator_if_exp:b773be61": "the labels of an off-schedule example's text: " + _DISPLAY,
    "modelcheck/gossip_controls.py:376:operator_number:2a765f71":
        "the unrendered control on two fragments instead of one: its three cases are still fed and each must "
        "still be counted exactly, so it still sees",
    "modelcheck/gossip_model.py:176:operator_augmented_assignment:8bde86bf":
        "flush's re-send of a dropped message replacing the actions before it: flush is read only to write the "
        "tail of a fair-exchange violation's trace, in a row that already fails",
    "modelcheck/gossip_search.py:186:operator_number:d4a315d3": "the popped-states count, read only for the progress line",
    "modelcheck/gossip_search.py:202:operator_number:31849f2d": "the symmetry merges' count: " + _DISPLAY,
    "modelcheck/instruments.py:396:operator_swap_op:3048931b":
        "which text the counts row's figure takes: its outcome reads off and unjudged apart; " + _DISPLAY,
    "modelcheck/order_checks.py:64:operator_swap_op:e07af532":
        "swapped_heads_of requiring more than two heads: it differs only for a member that is the first "
        "fragment's head exchange, which no universe holds (every pair of every universe compared both ways)",
    "modelcheck/order_checks.py:161:operator_swap_op:5b1b1c5f": "a C3 tally's seconds: " + _DISPLAY,
    "modelcheck/plan_coverage.py:52:operator_number:9ebddc23": "the default count a plan difference's text shows: " + _DISPLAY,
    "modelcheck/plan_coverage.py:83:operator_remove_unary_ops:76bf7566":
        "each plan's 'exact' JSON field: the row's outcome reads the differences list; " + _DISPLAY,
    "modelcheck/shards.py:46:operator_number:83801bdb":
        "N = 2 split by a prefix of one arrival instead of none: the plan still meets the closed forms (held in "
        "every run), only the shards' sizes change",
    "modelcheck/shards.py:183:operator_swap_op:609fec86": "a universe shard's weight (scheduling order only)",
    "modelcheck/universe_search.py:91:operator_augmented_assignment:59c01841": "the renders figure: " + _DISPLAY,
    "realstate/processes/soak/neighbour.py:331:operator_name:22778e61":
        "the neighbour control's directory made without parents: its parent is the soak's own work directory, "
        "which exists",
    # the bounded check's and the cross-check's doctored copies (new code after that draw)
    "modelcheck/gossip.py:81:operator_name:42e24966":
        "a refused bound's entry (no control of its own) also read as a blind control: only in a run that the "
        "refusal already fails",
    "modelcheck/gossip_controls.py:168:operator_number:4d1feb5f": "the cross-check's doctored copy two states off instead of one: disagreed with just the same",
    "modelcheck/gossip_controls.py:168:operator_swap_op:b3906ac9": "the cross-check's doctored copy one state fewer instead of more: disagreed with just the same",
    "modelcheck/gossip_controls.py:170:operator_number:464b1962": "the cross-check's doctored copy two states off instead of one: disagreed with just the same",
    "modelcheck/gossip_controls.py:170:operator_swap_op:cac646e2": "the cross-check's doctored copy one state fewer instead of more: disagreed with just the same",
    "modelcheck/gossip_controls.py:321:operator_number:2e08aad7": "the bounded check's doctored copy two states off instead of one: disagreed with just the same",
    "modelcheck/gossip_controls.py:321:operator_swap_op:f5d0db4e": "the bounded check's doctored copy one state fewer instead of more: disagreed with just the same",
    "modelcheck/instruments.py:373:operator_if_exp:128922c5":
        "a family's tally read even when absent: the instruments judge only the C3 families that ran, and each "
        "of those has its tally in every merge, so the guard is never false",
    # check's pipeline, a per-file sample (audit --targets instruments --file F --sample 8 --seed 71)
    "modelcheck/shards.py:85:operator_swap_op:8e18b267":
        "code_digest's refusal of a package that is not importable or not a package, weakened: its packages are "
        "fixed by the code (executors.CODE_PACKAGES and the check backend's realstate), each imported by the "
        "driver, and a worker runs perform_remote from modelcheck; no command names another package "
        "(tests/test_modelcheck_shards.py pins the refusal)",
    "modelcheck/shards.py:118:operator_number:a6aa84cd":
        "Shard.weight's default: plan and plan_canaries give every shard its weight, so the default is never read "
        "(and a weight only orders the dispatch and the progress line)",
    "modelcheck/shards.py:185:operator_number:8324ca74":
        "a universe shard's weight (factorial(top + 2) / 20): it orders the shards, largest first, and the progress "
        "line, not what they check; results merge in plan order",
    "modelcheck/shards.py:250:operator_name:799d4792":
        "gc.freeze before every task instead of once per process: freezing only sets objects aside from the cyclic "
        "collector (a later task's few leftover cycles stay uncollected: memory, never a count or a verdict)",
    "modelcheck/instruments.py:228:operator_remove_unary_ops:25964f4f":
        "the arrival canary's 'seen' in the run's JSON data: " + _DISPLAY + "; the row's outcome reads blind itself",
    "modelcheck/order_checks.py:166:operator_augmented_assignment:4f48fa42":
        "the union of every family's digests (digests[None], the universe table's 'canonical digests' column): "
        "only the table prints it; each family's verdict, and the replay's, read the family's own digests",
    "modelcheck/coverage.py:252:operator_swap_op:4a641bdd":
        "the copy-numbering control's builds off their schedule counted down instead of up: every such count of a "
        "run has the one sign, so their sum over shards is zero exactly when none was off, and the judgement "
        "(fed_as_reported) reads only whether it is zero; the figure prints the number",
    "modelcheck/coverage.py:356:operator_swap_op:0a7f73d7":
        "the first mismatched schedule's text (first_mismatch): " + _DISPLAY + "; the verdict reads the count",
    "modelcheck/coverage.py:266:operator_swap_op:794fb294":
        "each delivery read as a copy instead of as the original in the copy control's own check: the negation is "
        "applied to both sides of its comparison, so the two are equal exactly when they were",
    "modelcheck/coverage.py:259:operator_swap_op:3c8273e5":
        "the copy control's changed-originals count counted down: one-signed, so it is zero exactly when none "
        "changed, and the judgement reads only whether it is zero; the figure prints the number",
    # the same four files drawn again on the changed code (--sample 8 --seed 72, --parts check,realstate)
    "modelcheck/shards.py:185:operator_swap_op:6c06a6d3":
        "a universe shard's weight (LAW_RENDERS + refinement - factorial(top + 1) / 20): it orders the shards, "
        "largest first, and the progress line, not what they check; results merge in plan order",
    "modelcheck/shards.py:362:operator_swap_op:471e3e8f":
        "the universe table's violations column counted down: " + _DISPLAY,
    "modelcheck/shards.py:380:operator_swap_op:6878fd3b":
        "the merged CPU seconds counted down: a figure (cpu_seconds, the canaries' share_of_cpu); no row or exit "
        "code reads it",
    "modelcheck/coverage.py:46:operator_number:738eff3b":
        "the copy-numbering control with up to three re-deliveries instead of two: its schedules include those of "
        "two and its closed form follows the same constant, so it sees all the smaller one sees (more slowly)",
    "modelcheck/coverage.py:147:operator_swap_op:e9ad7449":
        "a one-leaf schedule's identity tagged +1 instead of -1: a leaf is a whole schedule only at N = 1, where "
        "every key of the shard and family is a leaf, so no merge's identity (two subtree numbers) is there to "
        "collide with it",
    "modelcheck/order_checks.py:147:operator_if_exp:d0227a02": _BATCH_ONLY,
    "modelcheck/instruments.py:398:operator_number:a5467919":
        "a failing coverage row's figure naming the second differing cell (or raising on the only one): built only "
        "when a count differs, which no valid input to the correct product makes; the verdict is decided first",
    "modelcheck/instruments.py:413:operator_swap_op:44fe257f": "the canaries' share_of_cpu figure: " + _DISPLAY,
    "modelcheck/order_checks.py:231:operator_swap_op:7c4beb4b":
        "_built_from_desc's bound (index > len(descs) instead of >=): every fragment object is numbered by its "
        "description's place (a twin's description is appended before its object is filed), so no object is "
        "numbered len(descs) and the two bounds refuse the same numbers",
    "modelcheck/order_checks.py:212:operator_swap_op:a01502f9":
        "sets[+1] for sets[-1] after the engine-order loop: its last pass is the top arity, whose sets are always "
        "two (the members, and the members with their twin or the members again), so both name the twin set",
}


_EMPTY_AXIS = ("m's shape check weakened for an empty token or head axis: such keys still fail (range() with step 0, "
               "or a division by zero) but with another error than the ValueError naming the shape; verify never "
               "builds empty keys (Fragment refuses them), tests/test_realstate_order_value.py pins the message")
_WRONG_RANK = ("m's shape check no longer refusing keys that are not [H, n, D]: every product caller passes the middle "
               "layer's [H, n, D], so verify cannot see it; pytest pins the refusal")

_LEADING_DIMS = ("reencode_into / reencode_keys on keys with fewer than four dimensions ([n, D] or [H, n, D]): the "
                 "library accepts them, but every product caller passes [L, H, n, D], so verify never calls it with "
                 "fewer; tests/test_realstate_fragment_render.py pins all three shapes")
_FSUM_PATH = ("fsum_order_value, the previous exact path kept as the benchmark's baseline and a second implementation "
              "for the tests: verify never calls it (not reached); tests/test_realstate_order_value.py compares it "
              "with the Fraction reference")
_SPAN_CHECK = ("reencode_spans' refusal of a piece that does not fit its destination (shape, dtype, position), "
               "weakened: every product caller passes pieces that fit, so verify cannot see it; "
               "tests/test_realstate_fragment_render.py pins the refusal")


# Survivors that are NOT equivalent: gaps left open, each with why (docs/RESULTS.md lists them).
# The two the sampled audit found are closed: Fragment equality is checked under C2 (curated case
# "Fragment equality inverted"), and render_layout has no default base any more.
GAPS: dict[str, str] = {
    # the census and the explorer's controls (--file modelcheck/gossip_census.py --file
    # modelcheck/gossip_controls.py --parts check --sample 40 --seed 2)
    "modelcheck/gossip_census.py:226:operator_number:21c802d6":
        "the census refusing a home of replica 0 given explicitly: the run's own configuration and the controls' "
        "pass no such homes (round-robin is None); tests/test_gossip_census.py counts one against the enumeration",
    "modelcheck/gossip_controls.py:202:operator_keywords:722c70ca":
        "the cross-check's verdict text inverted: both searches' verdicts go through it, so they still compare "
        "equal when both hold; only two searches stopped by different violations (a second fault in a backend "
        "that already fails the run) would compare equal",
    "modelcheck/gossip_census_checks.py:81:operator_keywords:a9dcfb60":
        "the census control leaving the orbit comparisons at the first cross-check without orbits: a cross-check "
        "has none only when a violation stopped its searches, which fails the run already",
    "modelcheck/gossip_controls.py:270:operator_name:1cf4439f":
        "the moves check passing a configuration the search refused: reached only when the search refuses its "
        "documented domain (no audited run does); tests/test_gossip_reference.py plants such refusals and "
        "requires the run blind",
    "modelcheck/gossip_controls.py:317:operator_name:51dc9523":
        "the bounded check passing a bound the search refused: reached only when the search refuses a bound of "
        "its documented domain; tests/test_gossip_reference.py plants such refusals and requires the run blind",
    # the gossip census, a sample of its file (--file modelcheck/gossip_census.py --sample 40 --seed 1)
    "modelcheck/gossip_census.py:71:operator_if_exp:14ff1e85":
        "the packing's width counting dropped slots also when drops are folded: only the refusal of a configuration "
        "past 63 bits reads it, and no audited run comes near (4 x 4, in-flight <= 3 folded would be refused); "
        "tests/test_gossip_census.py pins the widths",
    "modelcheck/gossip_census.py:218:operator_name:b815c2de":
        "census() without symmetry by default: every control and comparison passes symmetry explicitly; the "
        "benchmark relies on the default, which tests/test_gossip_census.py pins (4 x 4, in-flight <= 1: 48,371 orbits)",
    # the instruments' fourth fresh draw (audit --targets instruments --sample 85 --seed 5)
    "modelcheck/selection_check.py:58:operator_swap_op:157b954e":
        "the selection control leaving out the smallest name of all C3 families instead of the smallest the shard "
        "ran: in a run of every check that name was run, so the control is the same; an --only run without it "
        "would be reported blind (a false alarm, not a pass), and the audited check runs every check",
    # the instruments' fifth fresh draw (audit --targets instruments --sample 85 --seed 6)
    "modelcheck/gossip_model.py:35:operator_swap_op:4de06201":
        "the largest --max-depth accepted lowered to 60: a valid deeper bound refused as an input error; no "
        "audited run passes --max-depth",
    "modelcheck/order_checks.py:138:operator_swap_op:a4331100":
        "the shuffled iteration mode read inverted: other runs render one schedule a batch (slower, same "
        "digests); a run with --iteration shuffled on a render that fails gets traces whose shuffles are not "
        "reseeded, which no audited run asks for",
    # the instruments' sixth fresh draw (audit --targets instruments --sample 85 --seed 7)
    "modelcheck/instruments.py:101:operator_swap_op:776594f7":
        "the counts row's unjudged list leaving out every canary cell, not only the copies: in a run where every "
        "canary cell is held (a correct one) nothing changes; only a canary cell the table forgot (a second "
        "fault) would go unreported",
    "modelcheck/instruments.py:282:operator_number:68a71946":
        "the sample-size control two short of its due count instead of one: a judgement weakened to tolerate one "
        "short would pass it unseen; only such a second fault shows the difference",
    # the instruments' third fresh draw (audit --targets instruments --sample 85 --seed 4)
    "realstate/kernel/order_value.py:285:operator_swap_op:ce17238f": _FSUM_PATH,
    "realstate/kernel/order_value.py:288:operator_swap_op:722b2153": _FSUM_PATH,
    "realstate/kernel/fused.py:271:operator_swap_op:79ebbdc1":
        "rotate_rows' refusal of a buffer that is not a contiguous CPU tensor, weakened to refuse only one that is "
        "neither: its one product caller hands it a fresh concatenation on the CPU, so verify cannot see it; "
        "tests/test_realstate_small_path.py pins the refusal of a strided buffer",
    "realstate/kernel/rope.py:218:operator_swap_op:f0fbb311": _SPAN_CHECK,
    "realstate/kernel/rope.py:219:operator_swap_op:e7e29a40": _SPAN_CHECK,
    "realstate/kernel/order_value.py:201:operator_number:d7f4fdcf":
        "the spread one too small for rows of 2^j + 1 values: safe at level 1 (remainders are at most half a grid "
        "step) but not proven for later levels of short rows; no difference found on 2,000 adversarial rows, and "
        "no known-answer vector targets it",
    "realstate/kernel/order_value.py:232:operator_number:55afe91a":
        "sigma doubled at every level: the extraction stays exact by the same bounds, but numpy warns of an "
        "invalid integer cast on some adversarial rows (every result still matched); not proven equivalent",
    "realstate/kernel/order_value.py:186:operator_swap_op:d21049ea":
        "correctly_rounded_row_sums refusing only arrays that are both not 2-D and not float64: every caller "
        "passes a 2-D float64 array, so verify cannot see it; tests/test_realstate_order_value.py pins the refusal",
    "realstate/kernel/order_value.py:60:operator_number:80f33b44": _EMPTY_AXIS,
    "realstate/kernel/order_value.py:60:operator_swap_op:116a7f83": _WRONG_RANK,
    "realstate/kernel/order_value.py:60:operator_swap_op:88c41015": _EMPTY_AXIS,
    "realstate/kernel/rope.py:358:operator_swap_op:e0443f3c": _LEADING_DIMS,
    "realstate/kernel/rope.py:358:operator_number:1a1cd6c2": _LEADING_DIMS,
    "realstate/kernel/rope.py:360:operator_swap_op:96fc47e0": _LEADING_DIMS,
    "realstate/kernel/rope.py:358:operator_swap_op:2f33a7ae":
        "reencode_into no longer refusing a destination of another shape itself (reencode_spans still refuses it, "
        "with its own message): every product caller passes matching shapes; pytest pins the message",
    "spec/claims.py:189:operator_keywords:2d6796c9":
        "select_checks' --only matching: verify runs every check and never --only, so a wrong selection is "
        "invisible to it (tests/test_claim_registry.py covers --only)",
    "spec/claims.py:190:operator_remove_unary_ops:b81b9fb3":
        "select_checks' refusal of an --only that selects nothing: never reached by verify (pytest covers it)",
    "spec/claims.py:207:operator_number:17c2cc81":
        "exit code 2 when a part reports nothing: every verify part reports rows, so this branch never runs",
    "spec/claims.py:211:operator_number:0c5ded4b":
        "exit code 2 for a part not built (e.g. a device absent): verify on the CPU builds every part",
    "spec/fragment_set.py:104:operator_swap_op:984a79ef":
        "FragmentSet's 'arrival' iteration mode (a checker setting that keeps a forgotten sort from hiding behind "
        "id order): on the correct render every mode passes, so verify cannot see the mode changed; the planted "
        "sort-skipping bugs in tests/test_planted_in_source.py show what it is for",
    "spec/fragment_set.py:106:operator_swap_op:e50d1b2d":
        "FragmentSet's 'shuffled' iteration mode: as the arrival mode, invisible on the correct render",
    "spec/laws.py:36:operator_swap_op:1ce7486b":
        "inflation tested as a <= a|b OR b <= a|b: a weaker law predicate is invisible on a correct merge; "
        "tests/test_spec_fragment_set.py drives the predicates with broken merges",
    "proofs/render.py:240:operator_if_exp:62623b3a":
        "c3_sorted_unique_without_tiebreak is refuted whatever the order: with an uninterpreted order and only "
        "hash-injectivity it is refuted too, so the row does not show that the *key's* ties are what breaks "
        "it. The matching proof with the real key at N = 2 (unsat, ~3 s quiet, 7 s loaded) is not in prove, "
        "to keep prove within its 10 s budget; the real key's uniqueness for every N is c3_sorted_unique_step",
    "proofs/ordering.py:177:operator_if_exp:1cb88561":
        "unsigned_order_laws(width) is proved only at the key's width by prove; a smaller width is a test "
        "parameter (tests/test_proofs_*), so the branch that honours it never runs in verify",
    "proofs/ordering.py:258:operator_if_exp:3e97ac9d":
        "naive_is_strict_weak(allow_nan=False) (naive float < is a strict weak order without NaN) is proved "
        "only by tests/test_proofs_negative.py: as a prove row its vacuity check times out at 10 s, so prove "
        "runs only the refuted allow_nan=True form, and dropping the no-NaN premise goes unseen by verify",
}
