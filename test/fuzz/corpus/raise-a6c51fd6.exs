# ExZarr fuzz regression case: raises ArgumentError in ExZarr.Codec.Pipeline.decode/2
# first seen at step {:resize, {:delta, [-2]}}: {:raise, %{frame: "ExZarr.Codec.Pipeline.decode/2 (lib/ex_zarr/codec/pipeline.ex:74)", kind: ArgumentError, message: "errors were found at the given arguments:"}}
# found as case 130 of seed 1 (EXZARR_FUZZ_SEED=1), 18 shrinks
%{
  kind: :mutated,
  mutations: [{:doc, 0, 0, :delete}],
  ops: [
    {:open, []},
    {:get_slice, :whole},
    {:get_slice, {:box, 0, [], false}},
    {:set_slice, :fit, {:box, 0, [], false}},
    {:read_chunk, {:chunk, 0}},
    {:resize, {:delta, [-2]}},
    {:get_slice, {:box, 0, [], false}},
    {:get_slice, :whole}
  ],
  seed_write: true,
  setup:
    {:create,
     [
       zarr_format: 3,
       dtype: :string,
       shape: {3},
       compressor: nil,
       order: "C",
       endian: :little,
       chunks: {2}
     ]}
}
