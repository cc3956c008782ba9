# ExZarr fuzz regression case: raises ArgumentError in ExZarr.Array.store_chunk/3
# first seen at step {:resize, {:delta, [0, 2, ...]}}: {:raise, %{frame: "ExZarr.Array.store_chunk/3 (lib/ex_zarr/array.ex:571)", kind: ArgumentError, message: "argument error"}}
# found as case 797 of seed 2 (EXZARR_FUZZ_SEED=2), 39 shrinks
%{
  kind: :mutated,
  mutations: [{:doc, 0, 0, :delete}],
  ops: [
    {:open, []},
    {:get_slice, :whole},
    {:get_slice, {:box, 0, [], false}},
    {:set_slice, :fit, {:box, 0, [], false}},
    {:read_chunk, {:chunk, 0}},
    {:open, [write_empty_chunks: 0]},
    {:resize, {:delta, [0, 0, -1]}},
    {:get_slice, {:box, 0, [], false}},
    {:get_slice, :whole}
  ],
  seed_write: true,
  setup:
    {:create,
     [
       zarr_format: 3,
       dtype: :int32,
       shape: {2, 1, 2},
       compressor: nil,
       order: "C",
       endian: :little,
       chunks: {1, 1, 2}
     ]}
}
