defmodule ExZarr.Codecs.VlenBytes do
  @moduledoc """
  The `vlen-bytes` codec (array->bytes) for `:bytes` arrays (v3 `variable_length_bytes`):
  v3 `{"name": "vlen-bytes"}`, v2 the `{"id": "vlen-bytes"}` object codec of a `"|O"` array.
  The layout is described in `ExZarr.Codecs.VlenLayout`.

      spec = %{shape: {2}, dtype: :bytes, fill_value: "", decoded_size: nil}
      {:ok, s} = ExZarr.Codecs.VlenBytes.init(%{}, spec)
      {:ok, iodata} = ExZarr.Codecs.VlenBytes.encode([<<0, 255>>, ""], s)
      {:ok, {<<0, 255>>, ""}} = ExZarr.Codecs.VlenBytes.decode(IO.iodata_to_binary(iodata), s)
  """
  use ExZarr.Codecs.VlenLayout, name: "vlen-bytes", dtype: :bytes, utf8: false
end
