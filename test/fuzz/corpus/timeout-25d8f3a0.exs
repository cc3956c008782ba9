# ExZarr fuzz regression case: resize takes longer than the step time limit
# first seen at step {:resize, {:delta, [-1, 3]}}: :timeout
# written by hand: resize through a huge grid whose other dimension is empty
%{
  kind: :generated,
  ops: [open: [], resize: {:delta, [-1, 3]}],
  setup:
    {:store,
     [
       {".zarray",
        {:json,
         %{
           "chunks" => [2, 6, 1],
           "compressor" => :null,
           "dtype" => "<i2",
           "fill_value" => :null,
           "filters" => :null,
           "order" => "C",
           "shape" => [6, 4_294_967_297, 0],
           "zarr_format" => 2
         }}}
     ]}
}
