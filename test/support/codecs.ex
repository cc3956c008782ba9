defmodule ExZarr.Test.Codecs do
  @moduledoc false
  # A codec set up from its numcodecs (Zarr v2) config, as the codec tests use it.

  alias ExZarr.Codec.Registry

  @doc "The module and the state of a bytes->bytes codec given by its numcodecs config."
  @spec from_v2(map(), non_neg_integer() | nil, atom()) :: {module(), term()}
  def from_v2(v2_config, decoded_size, dtype \\ :float64) do
    {:ok, spec, :bytes_to_bytes} = Registry.from_v2(v2_config)
    {:ok, module, config} = Registry.resolve(spec)
    {:ok, state} = module.init(config, %{decoded_size: decoded_size, dtype: dtype})
    {module, state}
  end
end
