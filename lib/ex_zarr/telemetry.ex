defmodule ExZarr.Telemetry do
  @moduledoc """
  The telemetry events ExZarr emits, in the form of the `:telemetry` library (spans with
  `:start`, `:stop` and `:exception` events). ExZarr does not depend on `:telemetry`: it
  emits only when the `:telemetry` module is loaded, which it is in any application that
  attaches a handler (`:telemetry` 1.1 or later: spans return extra stop measurements).
  Without it an event costs one check of a loaded module.

  Events are emitted per operation and per storage request, never per element: a read of a
  thousand chunks is one `[:ex_zarr, :array, :read]` span and a thousand storage requests.
  Durations are in native time units (`System.convert_time_unit/3`), sizes in bytes.

  ## Spans

  Every span emits `prefix ++ [:start]` with measurements `%{monotonic_time, system_time}`,
  then `prefix ++ [:stop]` with `%{duration, monotonic_time}` (plus the measurements listed
  below) or, when the call raised, `prefix ++ [:exception]` with `%{duration,
  monotonic_time}` and `kind`, `reason` and `stacktrace` in the metadata. The stop metadata
  is the start metadata plus `result`: `:ok` or `{:error, reason}`.

    * `[:ex_zarr, :create]` and `[:ex_zarr, :open]` - `ExZarr.create/1`,
      `ExZarr.create_group/1`, `ExZarr.open/1`, `ExZarr.open_group/1`. Metadata: `function`
      (the function's name), `path` and `storage` (as given; no other option, so no
      credential), and on stop `node`: the array or group made or opened (`nil` on error).
    * `[:ex_zarr, :array, :read]` - `ExZarr.Array.get_slice/2`, the selection reads
      (`get_orthogonal/3`, `get_coordinates/3`, `get_mask/3`, `get_blocks/3`) and
      `ExZarr.Array.read_chunk/3`. Metadata: `array`, `function`, `options` (with the
      selection reads also `selection`: as given) or `chunk` (coordinates). Stop measurement `bytes`: the bytes returned
      (for variable-length types, the bytes of the items).
    * `[:ex_zarr, :array, :write]` - `ExZarr.Array.set_slice/3`, the selection writes
      (`set_orthogonal/4`, ...) and `ExZarr.Array.write_chunk/3`; metadata as for reads. Stop measurement `bytes`: the
      bytes written by the caller (0 when the call failed).
    * `[:ex_zarr, :storage, :request]` - every request `ExZarr.Storage` passes to a backend.
      Metadata: `backend` (the module), `operation` (`:get`, `:get_ranges`,
      `:get_ranges_with_generation`, `:put`, `:delete`, `:delete_prefix`, `:list`,
      `:list_dir`, `:size`) and `key` (the key, or the prefix listed or deleted). Stop
      measurement `bytes`: the bytes read or written (0 for the others).

  ## Events

    * `[:ex_zarr, :chunk_cache, :hit]` and `[:ex_zarr, :chunk_cache, :miss]` - one per lookup
      in a shared chunk cache; measurements `%{count: 1}`, plus `bytes` (the decoded chunk)
      on a hit; metadata `cache` (its name) and `key` (the chunk's storage key).

  ## Example

      :telemetry.attach("log-reads", [:ex_zarr, :array, :read, :stop], fn _event, m, meta, _ ->
        ms = System.convert_time_unit(m.duration, :native, :microsecond) / 1000
        IO.puts("\#{meta.function}: \#{m.bytes} bytes in \#{ms} ms")
      end, nil)
  """

  @compile {:no_warn_undefined, :telemetry}

  @typedoc "What a finished call contributes to the stop event: measurements and metadata."
  @type stop :: {measurements :: map(), metadata :: map()}

  @doc """
  Runs `fun` inside a span named `prefix`, when `:telemetry` is loaded; otherwise just runs
  it. `stop` turns the result into the stop event's extra measurements and metadata; it is
  called only when there is a span. The stop metadata also gets `result`.
  """
  @spec span([atom()], map(), (() -> result), (result -> stop())) :: result when result: term()
  def span(prefix, metadata, fun, stop \\ fn _result -> {%{}, %{}} end) do
    if enabled?() do
      :telemetry.span(prefix, metadata, fn ->
        result = fun.()
        {measurements, extra} = stop.(result)
        {result, measurements, metadata |> Map.merge(extra) |> Map.put(:result, status(result))}
      end)
    else
      fun.()
    end
  end

  @doc """
  Emits one event, when `:telemetry` is loaded. `metadata` may be a zero-arity function, called
  only then (for metadata that costs something to gather).
  """
  @spec execute([atom()], map(), map() | (() -> map())) :: :ok
  def execute(event, measurements, metadata) do
    if enabled?() do
      metadata = if is_function(metadata, 0), do: metadata.(), else: metadata
      :telemetry.execute(event, measurements, metadata)
    end

    :ok
  end

  @doc false
  # The span of an array read (`function` is the public function's name).
  @spec read(ExZarr.Array.t(), atom(), map(), (() -> result)) :: result when result: term()
  def read(array, function, metadata, fun) do
    metadata = Map.merge(metadata, %{array: array, function: function})
    span([:ex_zarr, :array, :read], metadata, fun, &{%{bytes: result_bytes(&1)}, %{}})
  end

  @doc false
  # The span of an array write of `data`.
  @spec write(ExZarr.Array.t(), atom(), map(), term(), (() -> result)) :: result
        when result: term()
  def write(array, function, metadata, data, fun) do
    metadata = Map.merge(metadata, %{array: array, function: function})

    span([:ex_zarr, :array, :write], metadata, fun, fn
      :ok -> {%{bytes: data_bytes(data)}, %{}}
      _error -> {%{bytes: 0}, %{}}
    end)
  end

  @doc false
  # The span of `ExZarr.create/1`, `open/1` and the group versions: `kind` is `:create` or
  # `:open`. Only `path` and `storage` of the options are kept: the others may hold secrets.
  @spec node(:create | :open, atom(), term(), (() -> result)) :: result when result: term()
  def node(kind, function, opts, fun) do
    opts = if is_binary(opts), do: [path: opts], else: opts
    given = if Keyword.keyword?(opts), do: opts, else: []
    metadata = %{function: function, path: given[:path], storage: given[:storage]}

    span([:ex_zarr, kind], metadata, fun, fn
      {:ok, node} -> {%{}, %{node: node}}
      _error -> {%{}, %{node: nil}}
    end)
  end

  @doc false
  # The span of one storage request.
  @spec request(module(), atom(), String.t(), (() -> result), (result -> non_neg_integer())) ::
          result
        when result: term()
  def request(backend, operation, key, fun, bytes \\ &result_bytes/1) do
    metadata = %{backend: backend, operation: operation, key: key}
    span([:ex_zarr, :storage, :request], metadata, fun, &{%{bytes: bytes.(&1)}, %{}})
  end

  @doc false
  # The bytes in `{:ok, data}`, `{:ok, parts}` or `{:ok, parts, generation}`; 0 otherwise.
  @spec result_bytes(term()) :: non_neg_integer()
  def result_bytes({:ok, data}), do: data_bytes(data)
  def result_bytes({:ok, data, _generation}), do: data_bytes(data)
  def result_bytes(_other), do: 0

  @doc false
  # The bytes of a binary or a list of binaries (iodata); 0 for anything else.
  @spec data_bytes(term()) :: non_neg_integer()
  def data_bytes(data) when is_binary(data), do: byte_size(data)

  def data_bytes(data) when is_list(data) do
    :erlang.iolist_size(data)
  rescue
    ArgumentError -> 0
  end

  def data_bytes(_data), do: 0

  defp status(:ok), do: :ok
  defp status({:error, reason}), do: {:error, reason}
  defp status(_ok), do: :ok

  defp enabled?, do: function_exported?(:telemetry, :span, 3)
end
