defmodule :telemetry do
  @moduledoc false
  # A stand-in for the `:telemetry` hex package (which cannot be fetched here), with the part
  # of its published API that ExZarr's contract rests on: attach/4, attach_many/4, detach/1,
  # execute/3 and span/3, with the measurements and metadata telemetry 1.x documents.
  # Handlers run in the emitting process; a handler that raises is detached, as telemetry
  # does. Handlers are kept in a persistent term (attached rarely, read on every event).

  @key {__MODULE__, :handlers}

  def attach(id, event, function, config), do: attach_many(id, [event], function, config)

  def attach_many(id, events, function, config) when is_function(function, 4) do
    handlers = handlers()

    if Enum.any?(handlers, &(elem(&1, 0) == id)) do
      {:error, :already_exists}
    else
      :persistent_term.put(@key, handlers ++ [{id, events, function, config}])
      :ok
    end
  end

  def detach(id) do
    handlers = handlers()

    case Enum.reject(handlers, &(elem(&1, 0) == id)) do
      ^handlers ->
        {:error, :not_found}

      rest ->
        :persistent_term.put(@key, rest)
        :ok
    end
  end

  def execute(event, measurements, metadata) when is_map(measurements) and is_map(metadata) do
    for {id, events, function, config} <- handlers(), event in events do
      try do
        function.(event, measurements, metadata, config)
      catch
        _kind, _reason -> detach(id)
      end
    end

    :ok
  end

  def span(prefix, start_metadata, fun) do
    start_time = System.monotonic_time()
    context = make_ref()
    start_metadata = Map.put(start_metadata, :telemetry_span_context, context)

    execute(
      prefix ++ [:start],
      %{monotonic_time: start_time, system_time: System.system_time()},
      start_metadata
    )

    try do
      fun.()
    catch
      kind, reason ->
        stop_time = System.monotonic_time()

        execute(
          prefix ++ [:exception],
          %{duration: stop_time - start_time, monotonic_time: stop_time},
          Map.merge(start_metadata, %{kind: kind, reason: reason, stacktrace: __STACKTRACE__})
        )

        :erlang.raise(kind, reason, __STACKTRACE__)
    else
      {result, stop_metadata} ->
        stop(prefix, start_time, %{}, stop_metadata, context)
        result

      {result, extra_measurements, stop_metadata} ->
        stop(prefix, start_time, extra_measurements, stop_metadata, context)
        result
    end
  end

  defp stop(prefix, start_time, extra, metadata, context) do
    stop_time = System.monotonic_time()

    execute(
      prefix ++ [:stop],
      Map.merge(extra, %{duration: stop_time - start_time, monotonic_time: stop_time}),
      Map.put(metadata, :telemetry_span_context, context)
    )
  end

  defp handlers, do: :persistent_term.get(@key, [])
end
