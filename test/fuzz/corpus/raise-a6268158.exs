# ExZarr fuzz regression case: raises ExZarr.Error in ExZarr.Array.unwrap!/1
# first seen at step {:chunk_stream, [bogus: true, level: true]}: {:raise, %{frame: "ExZarr.Array.unwrap!/1 (lib/ex_zarr/array.ex:673)", kind: ExZarr.Error, message: "ExZarr error: {:corrupt_chunk, \"c/0/0\", {:decode, \"numcodecs.bz2\", {:bz2, \"corrupt data (-5)\"}}}"}}
# found as case 1295 of seed 1 (EXZARR_FUZZ_SEED=1), 26 shrinks
%{
  kind: :mutated,
  mutations: [{:chunk, 0, {:truncate, 0}}, {:doc, 0, 0, :delete}],
  ops: [
    {:open, []},
    {:get_slice, :whole},
    {:get_slice, {:box, 0, [], false}},
    {:set_slice, :fit, {:box, 3, [], false}},
    {:read_chunk, {:chunk, 0}},
    {:chunk_stream, []},
    {:resize, {:delta, [0]}},
    {:get_slice, {:box, 0, [], false}},
    {:get_slice, :whole}
  ],
  seed_write: true,
  setup:
    {:create,
     [
       zarr_format: 3,
       dtype: :int32,
       shape: {2},
       compressor: nil,
       order: "C",
       endian: :little,
       chunks: {1}
     ]}
}
