# ExZarr fuzz regression case: resize goes over the per-process heap limit
# first seen at step {:resize, {:delta, [-1, -1, ...]}}: {:oom, ":killed"}
# found as case 2386 of seed 1 (EXZARR_FUZZ_SEED=1) or while shrinking it, 5 shrinks
%{
  kind: :mutated,
  mutations: [{:chunk, 8, {:append, {:lz4_claims, 18_446_744_073_709_551_616, {:random, 26, 4}}}}],
  ops: [
    {:open, []},
    {:get_slice, :whole},
    {:get_slice, {:box, 425, [], false}},
    {:set_slice, :fit, {:box, 696, [], false}},
    {:read_chunk, {:chunk, 7}},
    {:resize, {9_007_199_254_740_993, 15}},
    {:resize, {:delta, [20]}},
    {:resize, {:delta, [-1, -1, 2]}},
    {:get_slice, {:box, 546, [], false}},
    {:get_slice, :whole}
  ],
  seed_write: true,
  setup:
    {:create,
     [
       zarr_format: 3,
       dtype: :int32,
       shape: {0, 0},
       compressor: %{id: "zlib", level: 1},
       order: "C",
       endian: :big,
       chunks: {1, 2},
       shards: {3, 4}
     ]}
}
